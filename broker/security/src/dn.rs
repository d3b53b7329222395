//! A certificate's subject as Java prints it (`X500Principal.getName()`,
//! RFC 2253), which is the string Kafka's `ssl.principal.mapping.rules`
//! match and its default principal name (`User:<DN>`) carries.
//!
//! Java's form: the relative names in reverse order of their encoding,
//! joined by `,` without spaces; the parts of a multi-valued one joined by
//! `+` in encoding order; Java's RFC 2253 keywords (CN, C, L, ST, O, OU,
//! STREET, DC, UID) and the dotted OID for any other type; a value that is
//! one of the DER string types, read as UTF-8 whatever its type (as Java
//! 17 does), with `,=+<>#;"\` escaped by a
//! backslash, NUL as `\00`, and leading or trailing spaces escaped; any
//! other value (and every value of an OID-named type) as `#` and the hex
//! of its whole encoding. Neither Rust X.509 crate prints this form, so it
//! is written here, with a DER reader of its own that only walks to the
//! subject: every length is checked against what is left.

/// A certificate whose subject cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read the certificate's subject: {0}")]
pub struct DnError(&'static str);

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;

/// One DER element: its tag, its contents, and its whole encoding.
struct Tlv<'a> {
    tag: u8,
    contents: &'a [u8],
    whole: &'a [u8],
}

/// Reads the element at the start of `input`; the rest after it.
fn read(input: &[u8]) -> Result<(Tlv<'_>, &[u8]), DnError> {
    let (&tag, rest) = input.split_first().ok_or(DnError("truncated"))?;
    if tag & 0x1f == 0x1f {
        return Err(DnError("multi-byte tags are not used in names"));
    }
    let (&first, rest) = rest.split_first().ok_or(DnError("truncated length"))?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return Err(DnError("bad length"));
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, &rest[n..])
    };
    if rest.len() < len {
        return Err(DnError("length past the end"));
    }
    let header = input.len() - rest.len();
    let tlv = Tlv {
        tag,
        contents: &rest[..len],
        whole: &input[..header + len],
    };
    Ok((tlv, &rest[len..]))
}

fn expect<'a>(
    input: &'a [u8],
    tag: u8,
    what: &'static str,
) -> Result<(Tlv<'a>, &'a [u8]), DnError> {
    let (tlv, rest) = read(input)?;
    if tlv.tag != tag {
        return Err(DnError(what));
    }
    Ok((tlv, rest))
}

/// The subject of a DER certificate, as Java prints it.
pub fn subject_dn(certificate: &[u8]) -> Result<String, DnError> {
    let (cert, _) = expect(certificate, SEQUENCE, "not a certificate")?;
    let (tbs, _) = expect(cert.contents, SEQUENCE, "no to-be-signed certificate")?;
    let mut rest = tbs.contents;
    // [0] version, optional.
    let (first, after) = read(rest)?;
    if first.tag == 0xa0 {
        rest = after;
    }
    // serialNumber, signature, issuer, validity, then subject.
    for what in [
        "no serial number",
        "no signature algorithm",
        "no issuer",
        "no validity",
    ] {
        rest = read(rest).map_err(|_| DnError(what))?.1;
    }
    let (subject, _) = expect(rest, SEQUENCE, "no subject")?;
    format_name(subject.contents)
}

/// A `Name` (the contents of its RDNSequence) in Java's RFC 2253 form.
pub fn format_name(rdn_sequence: &[u8]) -> Result<String, DnError> {
    let mut rdns = Vec::new();
    let mut rest = rdn_sequence;
    while !rest.is_empty() {
        let (set, after) = expect(rest, SET, "a relative name is not a SET")?;
        rest = after;
        let mut avas = Vec::new();
        let mut inner = set.contents;
        while !inner.is_empty() {
            let (ava, after) = expect(inner, SEQUENCE, "an attribute is not a SEQUENCE")?;
            inner = after;
            let (oid, value) = expect(ava.contents, OID, "an attribute has no type")?;
            let (value, trailing) = read(value)?;
            if !trailing.is_empty() {
                return Err(DnError("an attribute has more than a type and a value"));
            }
            avas.push(format_ava(oid.contents, &value)?);
        }
        if avas.is_empty() {
            return Err(DnError("an empty relative name"));
        }
        rdns.push(avas.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

fn format_ava(oid: &[u8], value: &Tlv<'_>) -> Result<String, DnError> {
    let dotted = dotted_oid(oid)?;
    let keyword = match dotted.as_str() {
        "2.5.4.3" => Some("CN"),
        "2.5.4.6" => Some("C"),
        "2.5.4.7" => Some("L"),
        "2.5.4.8" => Some("ST"),
        "2.5.4.10" => Some("O"),
        "2.5.4.11" => Some("OU"),
        "2.5.4.9" => Some("STREET"),
        "0.9.2342.19200300.100.1.25" => Some("DC"),
        "0.9.2342.19200300.100.1.1" => Some("UID"),
        _ => None,
    };
    let text = match keyword {
        Some(_) => decode_string(value),
        None => None,
    };
    Ok(match (keyword, text) {
        (Some(k), Some(t)) => format!("{k}={}", escape(&t)),
        (k, _) => format!("{}=#{}", k.map_or(dotted, str::to_string), hex(value.whole)),
    })
}

/// The DER string types Java prints as text (the rest print as hex).
/// Java 17 reads the bytes of every one of them as UTF-8, whatever the
/// type says (so a BMPString's zero bytes become `\00`, and a Latin-1
/// T61String byte the replacement character); so does this.
fn decode_string(value: &Tlv<'_>) -> Option<String> {
    match value.tag {
        // UTF8String, PrintableString, T61String, IA5String, GeneralString, BMPString.
        0x0c | 0x13 | 0x14 | 0x16 | 0x1b | 0x1e => {
            Some(String::from_utf8_lossy(value.contents).into_owned())
        }
        _ => None,
    }
}

fn escape(value: &str) -> String {
    const ESCAPEES: &str = ",=+<>#;\"\\";
    let mut chars: Vec<String> = Vec::with_capacity(value.len());
    for c in value.chars() {
        chars.push(match c {
            '\0' => "\\00".to_string(),
            c if ESCAPEES.contains(c) => format!("\\{c}"),
            c => c.to_string(),
        });
    }
    let blank = |s: &String| s == " " || s == "\r";
    let lead = chars.iter().take_while(|s| blank(s)).count();
    let trail = chars.iter().rev().take_while(|s| blank(s)).count();
    let n = chars.len();
    chars
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            if i < lead || i >= n - trail {
                format!("\\{s}")
            } else {
                s
            }
        })
        .collect()
}

fn dotted_oid(bytes: &[u8]) -> Result<String, DnError> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut v: u64 = 0;
    for (i, b) in bytes.iter().enumerate() {
        if v > (u64::MAX >> 7) {
            return Err(DnError("an attribute type's arc is too large"));
        }
        v = (v << 7) | (b & 0x7f) as u64;
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (v / 40).min(2);
                arcs.push(first);
                arcs.push(v - first * 40);
            } else {
                arcs.push(v);
            }
            v = 0;
        } else if i + 1 == bytes.len() {
            return Err(DnError("an attribute type ends mid-arc"));
        }
    }
    if arcs.is_empty() {
        return Err(DnError("an empty attribute type"));
    }
    Ok(arcs
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("."))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD as B64;
    use base64::Engine as _;

    /// Certificates made with `openssl req -x509 -utf8 -subj …` (one with
    /// `-multivalue-rdn`), and the names OpenJDK 17 printed for them
    /// (`getSubjectX500Principal().getName()`), in testdata/dn/.
    const CERTS: &[(&str, &str)] = &[
        ("c1.pem", include_str!("../testdata/dn/c1.pem")),
        ("c2.pem", include_str!("../testdata/dn/c2.pem")),
        ("c3.pem", include_str!("../testdata/dn/c3.pem")),
        ("c4.pem", include_str!("../testdata/dn/c4.pem")),
        ("c5.pem", include_str!("../testdata/dn/c5.pem")),
        ("c6.pem", include_str!("../testdata/dn/c6.pem")),
        ("c7.pem", include_str!("../testdata/dn/c7.pem")),
        ("c8.pem", include_str!("../testdata/dn/c8.pem")),
        ("c9.pem", include_str!("../testdata/dn/c9.pem")),
        ("c10.pem", include_str!("../testdata/dn/c10.pem")),
    ];
    const JAVA: &str = include_str!("../testdata/dn/java-names.tsv");

    fn der(pem: &str) -> Vec<u8> {
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        B64.decode(body).expect("PEM body")
    }

    #[test]
    fn subjects_print_as_java_prints_them() {
        let java: Vec<(&str, &str)> = JAVA.lines().filter_map(|l| l.split_once('\t')).collect();
        assert_eq!(java.len(), CERTS.len());
        for (file, pem) in CERTS {
            let want = java
                .iter()
                .find(|(f, _)| f == file)
                .map(|(_, n)| *n)
                .expect("Java's name");
            assert_eq!(subject_dn(&der(pem)).as_deref(), Ok(want), "{file}");
        }
    }

    #[test]
    fn escaping_and_string_types() {
        assert_eq!(escape(" a,b "), "\\ a\\,b\\ ");
        assert_eq!(escape("x\0y#"), "x\\00y\\#");
        assert_eq!(escape("  "), "\\ \\ ");
        // A BMPString and a T61String read as UTF-8, as Java 17 reads them
        // (c9.pem and c10.pem show the JDK doing it).
        let bmp = [0x1e, 4, 0x00, 0xe9, 0x00, 0x21];
        let (t, _) = read(&bmp).expect("tlv");
        assert_eq!(decode_string(&t).as_deref(), Some("\0\u{fffd}\0!"));
        let t61 = [0x14, 1, 0xe9];
        let (t, _) = read(&t61).expect("tlv");
        assert_eq!(decode_string(&t).as_deref(), Some("\u{fffd}"));
        // A keyword type with a non-string value prints as hex.
        let ava =
            format_ava(&[0x55, 0x04, 0x03], &read(&[0x02, 1, 5]).expect("tlv").0).expect("ava");
        assert_eq!(ava, "CN=#020105");
    }

    #[test]
    fn damaged_certificates_are_errors_not_panics() {
        let good = der(CERTS[0].1);
        assert!(subject_dn(&good).is_ok());
        for cut in 0..good.len() {
            let _ = subject_dn(&good[..cut]);
        }
        let mut seed: u64 = 42;
        for _ in 0..20_000 {
            let mut bad = good.clone();
            for _ in 0..3 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (seed >> 33) as usize % bad.len();
                bad[i] = (seed >> 17) as u8;
            }
            let _ = subject_dn(&bad);
        }
        assert!(subject_dn(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(subject_dn(&[]).is_err());
        assert_eq!(
            dotted_oid(&[0x2a, 0x86]),
            Err(DnError("an attribute type ends mid-arc"))
        );
    }
}
