//! What the page's two SVG charts share: the document's head with its title, and the axes with
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
    let y_ticks = (y_top / 0.2).round() as i32;
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
