//! What the page's SVG charts share: the document's head with its title, and the axes with
//! their ticks and labels (y as a share of full BAL's throughput, ticks every 0.2).

use std::fmt::Write;

/// A chart's frame: the plot's right edge, the document's height and the margin, px.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    pub right: f64,
    pub height: f64,
    pub margin: f64,
}

/// The SVG document's opening tag, a white background, and `title` centred at `title_x`.
pub(crate) fn head(width: f64, height: f64, title: &str, title_x: f64) -> String {
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let _ = writeln!(
        svg,
        "<text x=\"{title_x:.1}\" y=\"20\" text-anchor=\"middle\" font-size=\"13\">{title}</text>"
    );
    svg
}

/// `count + 1` ticks from 0 to `top`, each labelled with as many decimals as its step needs
/// (a step of 0.4 gets one, so no two ticks print the same label).
pub(crate) fn even_ticks(top: f64, count: u32) -> Vec<(f64, String)> {
    let step = top / f64::from(count);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    (0..=count)
        .map(|i| top * f64::from(i) / f64::from(count))
        .map(|v| (v, format!("{v:.decimals$}")))
        .collect()
}

/// The axes of `frame`: x with the ticks `x_ticks` (a value and its label each) and `x_label`
/// below, y from 0 to `y_top` with a tick every 0.2 and "throughput / full BAL's" beside; `x` and
/// `y` place a value.
pub(crate) fn axes(
    svg: &mut String,
    frame: Frame,
    (x_ticks, x_label): (&[(f64, String)], &str),
    y_top: f64,
    x: &impl Fn(f64) -> f64,
    y: &impl Fn(f64) -> f64,
) {
    let Frame {
        right,
        height,
        margin,
    } = frame;
    let _ = writeln!(
        svg,
        "<line x1=\"{m}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/><line x1=\"{m}\" y1=\"{t}\" x2=\"{m}\" y2=\"{b}\" stroke=\"black\"/>",
        m = margin,
        b = height - margin,
        r = right,
        t = margin
    );
    for (v, label) in x_ticks {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            x(*v),
            height - margin + 16.0
        );
    }
    // Only ticks within the axis: a tick above `y_top` would be clamped onto the top and read as
    // a value it is not.
    let y_ticks = (y_top / 0.2 + 1e-9).floor() as i32;
    for i in 0..=y_ticks {
        let v = f64::from(i) * 0.2;
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.1}</text>",
            margin - 6.0,
            y(v) + 4.0
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{x_label}</text>",
        (margin + right) / 2.0,
        height - 18.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"16\" y=\"{:.1}\" transform=\"rotate(-90 16 {:.1})\" text-anchor=\"middle\">throughput / full BAL's</text>",
        height / 2.0,
        height / 2.0
    );
}

/// The top of a share axis (ticks every 0.2) over data reaching `highest`: the next tick above it
/// with a tenth more room, at least 0.2, so the axis ends on a tick.
pub(crate) fn share_axis_top(highest: f64) -> f64 {
    (highest.max(0.2) * 1.1 / 0.2).ceil() * 0.2
}

/// The smallest of 1, 2 or 5 times a power of ten at or above `v`.
pub(crate) fn nice_ceiling(v: f64) -> f64 {
    let power = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * power)
}

/// Reading a chart back, for tests: every tick label where its value belongs.
#[cfg(test)]
pub(crate) mod read_back {
    /// The numeric tick labels of `svg` as (value, x, y): the y axis's are end-anchored, the x
    /// axis's centred (a title or axis label is not a number).
    fn ticks(svg: &str, anchor: &str) -> Vec<(f64, f64, f64)> {
        let attr = |tag: &str, name: &str| -> Option<f64> {
            let from = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            tag[from..].split('"').next()?.parse().ok()
        };
        svg.split("<text ")
            .skip(1)
            .filter_map(|tag| {
                let (attrs, rest) = tag.split_once('>')?;
                if !attrs.contains(&format!("text-anchor=\"{anchor}\"")) {
                    return None;
                }
                let value: f64 = rest.split('<').next()?.parse().ok()?;
                let attrs = format!(" {attrs}");
                Some((value, attr(&attrs, "x")?, attr(&attrs, "y")?))
            })
            .collect()
    }

    /// Panics unless the positions of `(value, position)` pairs lie on one line through the
    /// first and last tick (within half a pixel), with no two labels alike.
    fn assert_linear(axis: &str, ticks: &[(f64, f64)], svg: &str) {
        assert!(
            ticks.len() >= 3,
            "{axis} axis: {} ticks\n{svg}",
            ticks.len()
        );
        let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
        let slope = (last.1 - first.1) / (last.0 - first.0);
        for (value, at) in ticks {
            let expected = first.1 + (value - first.0) * slope;
            assert!(
                (at - expected).abs() < 0.5,
                "{axis} axis: the tick {value} is at {at:.1} px, its value belongs at {expected:.1}\n{svg}"
            );
        }
        let mut values: Vec<f64> = ticks.iter().map(|t| t.0).collect();
        values.dedup();
        assert_eq!(
            values.len(),
            ticks.len(),
            "{axis} axis: labels repeat\n{svg}"
        );
    }

    /// Panics unless both axes' tick labels stand at their values.
    pub(crate) fn assert_ticks_true(svg: &str) {
        let y: Vec<(f64, f64)> = ticks(svg, "end").into_iter().map(|t| (t.0, t.2)).collect();
        assert_linear("y", &y, svg);
        let x: Vec<(f64, f64)> = ticks(svg, "middle")
            .into_iter()
            .map(|t| (t.0, t.1))
            .collect();
        assert_linear("x", &x, svg);
    }

    #[test]
    fn a_tick_clamped_onto_the_top_is_caught() {
        let frame = super::Frame {
            right: 500.0,
            height: 420.0,
            margin: 60.0,
        };
        // An axis to 0.9: its last tick is 0.8, 0.2 apart as every other.
        let y_top = 0.9;
        let x = |v: f64| 60.0 + v * 100.0;
        let y = |v: f64| 360.0 - v.clamp(0.0, y_top) / y_top * 300.0;
        let mut svg = String::new();
        super::axes(
            &mut svg,
            frame,
            (&super::even_ticks(2.0, 5), "x"),
            y_top,
            &x,
            &y,
        );
        assert!(
            svg.contains(">0.8</text>") && !svg.contains(">1.0</text>"),
            "{svg}"
        );
        assert_ticks_true(&svg);
        // The x labels of a step under 1 keep their decimal: 0.4, not 0.
        assert!(
            svg.contains(">0.4</text>") && svg.contains(">1.2</text>"),
            "{svg}"
        );
        // A label drawn where another value belongs fails.
        let wrong = svg.replace(">0.8</text>", ">1.0</text>");
        assert!(std::panic::catch_unwind(|| assert_ticks_true(&wrong)).is_err());
    }
}
