//! Saving something the page drew as a file: a chart's SVG as it is, or drawn onto a canvas and
//! saved as PNG. The browser downloads through a `data:` link, which the page's CSP allows.

/// A file name from a chart title: letters, digits and dashes.
pub fn file_name(title: &str) -> String {
    let mut out = String::from("vramio-");
    let mut dash = false;
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    out.trim_end_matches('-').to_owned()
}

fn data_url(svg: &str) -> String {
    format!(
        "data:image/svg+xml;charset=utf-8,{}",
        String::from(js_sys::encode_uri_component(svg))
    )
}

/// Downloads `href` as `name` through a link clicked once.
fn download(href: &str, name: &str) {
    use wasm_bindgen::JsCast;
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(a) = doc.create_element("a") else {
        return;
    };
    let Ok(a) = a.dyn_into::<web_sys::HtmlAnchorElement>() else {
        return;
    };
    a.set_href(href);
    a.set_download(name);
    a.click();
}

/// Saves `svg` as `name`.
pub fn svg(svg: &str, name: &str) {
    download(&data_url(svg), name);
}

/// Draws `svg` onto a canvas at twice its size and saves it as `name` (PNG).
pub fn png(svg: &str, name: &str) {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(img) = web_sys::HtmlImageElement::new() else {
        return;
    };
    let name = name.to_owned();
    let drawn = img.clone();
    let onload = Closure::once(move || {
        let (w, h) = (drawn.natural_width() * 2, drawn.natural_height() * 2);
        let Some(canvas) = doc
            .create_element("canvas")
            .ok()
            .and_then(|c| c.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        else {
            return;
        };
        canvas.set_width(w);
        canvas.set_height(h);
        let Some(ctx) = canvas
            .get_context("2d")
            .ok()
            .flatten()
            .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok())
        else {
            return;
        };
        let _ = ctx.draw_image_with_html_image_element_and_dw_and_dh(
            &drawn,
            0.0,
            0.0,
            f64::from(w),
            f64::from(h),
        );
        if let Ok(url) = canvas.to_data_url_with_type("image/png") {
            download(&url, &name);
        }
    });
    img.set_onload(Some(onload.as_ref().unchecked_ref()));
    onload.forget();
    img.set_src(&data_url(svg));
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_names_keep_letters_and_digits() {
        assert_eq!(
            super::file_name("GPU memory used"),
            "vramio-gpu-memory-used"
        );
        assert_eq!(
            super::file_name("Disk read (MiB/s)"),
            "vramio-disk-read-mib-s"
        );
    }
}
