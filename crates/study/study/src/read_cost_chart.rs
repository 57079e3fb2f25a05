//! The page's chart of what share of full BAL's throughput a read path of a given cost keeps:
//! each reading run's CPU per key read against its share, beside the floor (RocksDB's own reads of
//! the same keys) and the most the research's figures leave its parallel I/O's reads. A reader
//! places any implementation on it by its CPU per key read.

use crate::{
    Findings, chart,
    names::{design_colour, design_name, research_parallel_share},
    read_cost::ReadCostPoint,
};
use bal_replay_engine::IoDesign;
use std::fmt::Write;

/// The chart as SVG: a filled point per worker count of the page's own runs, an open one per
/// regime of the sweep; the floor's two readers as dashed lines; the research's parallel I/O as a
/// square at the most its figures leave its reads. `None` without a point to draw.
pub fn read_cost_svg(findings: &Findings) -> Option<String> {
    let points = &findings.read_cost_points;
    if points.is_empty() {
        return None;
    }
    let (width, height, margin) = (700.0, 420.0, 60.0);
    let research = findings
        .research_read_us_per_key()
        .map(|us| (us, research_parallel_share()));
    let floors: Vec<(&str, f64)> = findings
        .read_floor
        .iter()
        .flat_map(|f| {
            [
                ("floor: point reads", f.point.cpu_us),
                ("floor: multi-gets", f.multiget.cpu_us),
            ]
        })
        .filter(|(_, us)| *us > 0.0)
        .collect();
    let widest = points
        .iter()
        .map(|p| p.cpu_us_per_key)
        .chain(floors.iter().map(|f| f.1))
        .chain(research.map(|r| r.0))
        .fold(1.0, f64::max);
    let x_max = chart::nice_ceiling(widest * 1.05);
    let highest = points
        .iter()
        .map(|p| p.share_of_full)
        .chain(research.map(|r| r.1))
        .fold(0.0, f64::max);
    let y_max = chart::share_axis_top(highest);
    let plot_right = width - margin - 190.0;
    let x = |v: f64| margin + v.clamp(0.0, x_max) / x_max * (plot_right - margin);
    let y = |v: f64| height - margin - v.clamp(0.0, y_max) / y_max * (height - 2.0 * margin);
    let mut svg = chart::head(
        width,
        height,
        "Share of full BAL's throughput against the reads' CPU per key read",
        width / 2.0,
    );
    chart::axes(
        &mut svg,
        chart::Frame {
            right: plot_right,
            height,
            margin,
        },
        (&chart::even_ticks(x_max, 5), "reads' CPU per key read (µs)"),
        y_max,
        &x,
        &y,
    );
    for (i, (name, us)) in floors.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<line x1=\"{fx:.1}\" y1=\"{top:.1}\" x2=\"{fx:.1}\" y2=\"{bottom:.1}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">{name}</text>",
            x(*us) + 3.0,
            margin + 12.0 + 13.0 * i as f64,
            fx = x(*us),
            top = margin,
            bottom = height - margin,
        );
    }
    draw_points(&mut svg, points, &x, &y);
    if let Some((us, share)) = research {
        let _ = writeln!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
            x(us) - 4.5,
            y(share) - 4.5,
            design_colour(IoDesign::Parallel)
        );
    }
    legend(&mut svg, plot_right + 16.0, margin, points, research);
    svg.push_str("</svg>\n");
    Some(svg)
}

/// Each point: filled and labelled by its workers where it is the page's own run, open where the
/// sweep measured it.
fn draw_points(
    svg: &mut String,
    points: &[ReadCostPoint],
    x: &impl Fn(f64) -> f64,
    y: &impl Fn(f64) -> f64,
) {
    for p in points {
        let colour = design_colour(p.design);
        let (cx, cy) = (x(p.cpu_us_per_key), y(p.share_of_full));
        match p.regime {
            None => {
                let _ = writeln!(
                    svg,
                    "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" fill=\"{colour}\">{}w</text>",
                    cx + 5.0,
                    cy - 4.0,
                    p.threads
                );
            }
            Some(_) => {
                let _ = writeln!(
                    svg,
                    "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"/>"
                );
            }
        }
    }
}

/// What the chart says, in a sentence: per reading design, the range of its CPU per key read and
/// of the share it kept over the points drawn, and the research's mark.
pub fn read_cost_chart_sentence(findings: &Findings) -> Option<String> {
    let points = &findings.read_cost_points;
    let range = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() - 1])
    };
    let parts: Vec<String> = IoDesign::ALL
        .into_iter()
        .filter_map(|design| {
            let of: Vec<&ReadCostPoint> = points.iter().filter(|p| p.design == design).collect();
            if of.is_empty() {
                return None;
            }
            let us = range(&mut of.iter().map(|p| p.cpu_us_per_key).collect());
            let share = range(&mut of.iter().map(|p| p.share_of_full).collect());
            Some(format!(
                "{}'s reads cost {} µs per key read and it kept {} of full BAL's throughput ({} run{})",
                design_name(design),
                span(us, 1),
                span(share, 2),
                of.len(),
                if of.len() == 1 { "" } else { "s" }
            ))
        })
        .collect();
    let research = findings
        .research_read_us_per_key()
        .map(|us| {
            format!(
                "; the research's parallel I/O kept {:.2} with its reads at no more than {us:.1} µs per key read (its 16-thread figures, over this chain's key reads per Mgas)",
                research_parallel_share()
            )
        })
        .unwrap_or_default();
    let kinds = if points.iter().any(|p| p.regime.is_some()) {
        "filled: this page's runs, labelled by workers; open: the regime sweep's"
    } else {
        "labelled by workers"
    };
    let floors = if findings.read_floor.is_some() {
        "; the dashed lines are the floor's two readers"
    } else {
        ""
    };
    (!parts.is_empty()).then(|| {
        format!(
            "Each point is one reading run at batch {}: its reads' CPU per key read against the share of full BAL's throughput it kept at the same worker count ({kinds}){floors}. Here {}{research}.",
            findings.headline_batch,
            parts.join("; ")
        )
    })
}

/// `lo-hi` with `decimals`, or one value where both print alike.
fn span((lo, hi): (f64, f64), decimals: usize) -> String {
    let (lo, hi) = (format!("{lo:.decimals$}"), format!("{hi:.decimals$}"));
    if lo == hi { lo } else { format!("{lo}-{hi}") }
}

/// One line per design drawn, the two kinds of point, and the research's mark where drawn.
fn legend(
    svg: &mut String,
    legend_x: f64,
    top: f64,
    points: &[ReadCostPoint],
    research: Option<(f64, f64)>,
) {
    let designs: Vec<IoDesign> = IoDesign::ALL
        .into_iter()
        .filter(|d| points.iter().any(|p| p.design == *d))
        .collect();
    let mut ly = top + 10.0;
    for design in designs {
        let _ = writeln!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{ly:.1}\" r=\"4\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            legend_x + 4.0,
            design_colour(design),
            legend_x + 14.0,
            ly + 4.0,
            design_name(design)
        );
        ly += 18.0;
    }
    let _ = writeln!(
        svg,
        "<text x=\"{legend_x:.1}\" y=\"{:.1}\">filled: this page's runs (workers)</text>",
        ly + 4.0
    );
    ly += 16.0;
    if points.iter().any(|p| p.regime.is_some()) {
        let _ = writeln!(
            svg,
            "<text x=\"{legend_x:.1}\" y=\"{:.1}\">open: the regime sweep's runs</text>",
            ly + 4.0
        );
        ly += 16.0;
    }
    if let Some((us, share)) = research {
        let _ = writeln!(
            svg,
            "<rect x=\"{legend_x:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">research: parallel I/O</text><text x=\"{:.1}\" y=\"{:.1}\">({share:.2} at most {us:.1} µs)</text>",
            ly - 4.0,
            design_colour(IoDesign::Parallel),
            legend_x + 14.0,
            ly + 4.0,
            legend_x + 14.0,
            ly + 18.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(
        design: IoDesign,
        threads: usize,
        regime: Option<&str>,
        us: f64,
        share: f64,
    ) -> ReadCostPoint {
        ReadCostPoint {
            design,
            threads,
            regime: regime.map(str::to_owned),
            cpu_us_per_key: us,
            share_of_full: share,
        }
    }

    #[test]
    fn every_point_is_drawn_where_its_values_belong_and_the_axes_read_true() {
        let mut findings = crate::findings::golden_findings();
        findings.read_cost_points.clear();
        findings.research_gap = None;
        findings.read_floor = None;
        assert_eq!(read_cost_svg(&findings), None);
        findings.read_cost_points = vec![
            point(IoDesign::Parallel, 1, None, 38.0, 0.22),
            point(IoDesign::Parallel, 8, None, 44.0, 0.49),
            point(IoDesign::Batched, 2, None, 5.0, 0.72),
            point(
                IoDesign::Parallel,
                2,
                Some("direct, 8 MiB block cache"),
                25.0,
                0.45,
            ),
        ];
        let svg = read_cost_svg(&findings).unwrap();
        crate::chart::read_back::assert_ticks_true(&svg);
        // x to 50 µs (the data stop at 44), y to 0.8 (they stop at 0.72).
        assert!(
            svg.contains(">50</text>") && !svg.contains(">100</text>"),
            "{svg}"
        );
        assert!(
            svg.contains(">0.8</text>") && !svg.contains(">1.0</text>"),
            "{svg}"
        );
        // Filled points for the page's runs, open ones for the sweep's, and a legend circle per
        // design.
        assert_eq!(svg.matches("r=\"4\" fill=\"#").count(), 3 + 2, "{svg}");
        assert_eq!(svg.matches("stroke-width=\"1.5\"").count(), 1, "{svg}");
        assert!(svg.contains(">8w</text>") && svg.contains("open: the regime sweep's runs"));
        // The point at 44 µs and 0.49 stands where the axes put those values.
        let (x, y) = (
            60.0 + 44.0 / 50.0 * (700.0 - 60.0 - 190.0 - 60.0),
            360.0 - 0.49 / 0.8 * 300.0,
        );
        assert!(
            svg.contains(&format!("cx=\"{x:.1}\" cy=\"{y:.1}\"")),
            "{x:.1},{y:.1}\n{svg}"
        );
        assert!(
            !svg.contains("floor:") && !svg.contains("research:"),
            "{svg}"
        );
        let sentence = read_cost_chart_sentence(&findings).unwrap();
        assert!(
            sentence.contains("parallel I/O's reads cost 25.0-44.0 µs per key read and it kept 0.22-0.49 of full BAL's throughput (3 runs)")
                && sentence.contains("batched I/O's reads cost 5.0 µs per key read and it kept 0.72 of full BAL's throughput (1 run)")
                && sentence.contains("open: the regime sweep's")
                && !sentence.contains("dashed")
                && !sentence.contains("research"),
            "{sentence}"
        );
        // The floor's readers as dashed lines, the axis widened to the farther one.
        let reads = |cpu_s: f64| bal_replay_bench::FloorReads {
            keys: 100_000,
            cpu_s,
            ..Default::default()
        };
        findings.read_floor = crate::read_cost::FloorRows::at(
            &[bal_replay_bench::ReadFloor {
                batch: 50,
                blocks: 150,
                point: reads(5.5),
                multiget: reads(0.56),
            }],
            50,
        );
        let svg = read_cost_svg(&findings).unwrap();
        crate::chart::read_back::assert_ticks_true(&svg);
        assert!(
            svg.contains(">floor: point reads</text>") && svg.contains(">floor: multi-gets</text>")
        );
        assert!(
            svg.contains(">100</text>") && !svg.contains(">50</text>"),
            "{svg}"
        );
        assert_eq!(svg.matches("stroke-dasharray").count(), 2, "{svg}");
    }
}
