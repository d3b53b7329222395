//! The little XML S3 needs: escaping values into responses and pulling the
//! text of simple elements out of request bodies (CompleteMultipartUpload,
//! Delete). It never builds a document tree.

use crate::error::S3Error;

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

pub fn unescape(s: &str) -> Result<String, S3Error> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find(';')
            .ok_or_else(|| S3Error::MalformedXml(format!("unterminated entity in {s:?}")))?;
        let entity = &rest[i + 1..i + end];
        match entity {
            "amp" => out.push('&'),
            "lt" => out.push('<'),
            "gt" => out.push('>'),
            "quot" => out.push('"'),
            "apos" => out.push('\''),
            e if e.starts_with("#x") || e.starts_with("#X") => out.push(char_ref(&e[2..], 16, s)?),
            e if e.starts_with('#') => out.push(char_ref(&e[1..], 10, s)?),
            e => {
                return Err(S3Error::MalformedXml(format!(
                    "unknown entity &{e}; in {s:?}"
                )))
            }
        }
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn char_ref(digits: &str, radix: u32, s: &str) -> Result<char, S3Error> {
    u32::from_str_radix(digits, radix)
        .ok()
        .and_then(char::from_u32)
        .ok_or_else(|| S3Error::MalformedXml(format!("bad character reference in {s:?}")))
}

/// The unescaped text of every `<tag>...</tag>` inside `doc`, in order.
pub fn texts(doc: &str, tag: &str) -> Result<Vec<String>, S3Error> {
    elements(doc, tag)?.into_iter().map(unescape).collect()
}

/// The raw inner text of every `<tag>...</tag>` (for elements that hold elements).
pub fn elements<'a>(doc: &'a str, tag: &str) -> Result<Vec<&'a str>, S3Error> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = doc;
    while let Some(i) = rest.find(&open) {
        let body = &rest[i + open.len()..];
        let j = body
            .find(&close)
            .ok_or_else(|| S3Error::MalformedXml(format!("<{tag}> is not closed")))?;
        out.push(&body[..j]);
        rest = &body[j + close.len()..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_extract() {
        let k = "a&b<c>\"d'é";
        assert_eq!(unescape(&escape(k)).unwrap(), k);
        assert_eq!(unescape("x&#65;&#x42;").unwrap(), "xAB");
        assert!(unescape("&bogus;").is_err());
        let doc =
            "<Delete><Object><Key>a&amp;1</Key></Object><Object><Key>b</Key></Object></Delete>";
        let objs = elements(doc, "Object").unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(texts(objs[0], "Key").unwrap(), vec!["a&1"]);
        assert!(texts("<Key>open", "Key").is_err());
    }
}
