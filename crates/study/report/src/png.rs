//! A bitmap backend that rasterizes text itself. plotters 0.3.7's `ab_glyph` text path places each
//! glyph at its advance but drops the glyph's left side bearing, so "BAL" prints as "B AL"; this
//! wrapper draws every glyph at advance + bearing and delegates everything else to
//! [`BitMapBackend`]. Vertical placement and anchors are plotters' own, so layouts do not move.

use ab_glyph::{Font, FontRef, ScaleFont};
use plotters::prelude::BitMapBackend;
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    text_anchor::{HPos, VPos},
};

/// [`BitMapBackend`] with corrected text.
pub(crate) struct PngBackend<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
}

impl<'a> PngBackend<'a> {
    pub(crate) fn new(inner: BitMapBackend<'a>, font: FontRef<'static>) -> Self {
        Self { inner, font }
    }
}

type BitMapError = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

impl DrawingBackend for PngBackend<'_> {
    type ErrorType = BitMapError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        // The same box and anchor arithmetic as plotters' default `draw_text`.
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let (w, h) = self.get_size();
        let size = style.size() as f32;
        let font = self.font.as_scaled(size);
        let mut pen = 0f32;
        let mut prev = None;
        let mut pixels = Vec::new();
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                pen += font.kern(p, id);
            }
            prev = Some(id);
            let glyph = id.with_scale_and_position(size, ab_glyph::point(pen, 0.0));
            if let Some(outline) = font.outline_glyph(glyph) {
                let bounds = outline.px_bounds();
                // plotters puts the glyph's top at size / 2 + its offset from the baseline.
                let top = (size / 2.0 + bounds.min.y) as i32;
                let left = bounds.min.x.round() as i32;
                outline.draw(|x, y, coverage| {
                    pixels.push((left + x as i32, top + y as i32, coverage))
                });
            }
            pen += font.h_advance(id);
        }
        for (x, y, coverage) in pixels {
            let (x, y) = trans.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                let c = BackendColor {
                    alpha: color.alpha * f64::from(coverage.min(1.0)),
                    rgb: color.rgb,
                };
                self.inner.draw_pixel((x, y), c)?;
            }
        }
        Ok(())
    }
}
