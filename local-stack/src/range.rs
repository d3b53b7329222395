//! The `Range` request header of a GET: one byte range in any of its three
//! forms (`a-b`, `a-`, `-n`), resolved against the object's size.

use crate::error::S3Error;

/// `Ok(None)`: no usable range, serve the whole object (as S3 does for
/// ranges it ignores). `Ok(Some((start, end)))`: the half-open byte range.
pub fn resolve(header: &str, size: u64) -> Result<Option<(u64, u64)>, S3Error> {
    let Some(spec) = header.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None); // S3 ignores multi-range requests and answers the whole object
    }
    let (a, b) = spec
        .split_once('-')
        .ok_or_else(|| S3Error::InvalidArgument(format!("malformed Range header {header:?}")))?;
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| S3Error::InvalidArgument(format!("malformed Range header {header:?}")))
    };
    let (start, end) = match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, true) => {
            return Err(S3Error::InvalidArgument(format!(
                "malformed Range header {header:?}"
            )))
        }
        (true, false) => {
            let n = num(b)?;
            if n == 0 {
                return Err(S3Error::InvalidRange(size));
            }
            (size.saturating_sub(n), size)
        }
        (false, true) => (num(a)?, size),
        (false, false) => {
            let (s, e) = (num(a)?, num(b)?);
            if e < s {
                return Ok(None); // syntactically invalid ranges are ignored (RFC 9110)
            }
            (s, e.saturating_add(1).min(size))
        }
    };
    if start >= size {
        return Err(S3Error::InvalidRange(size));
    }
    Ok(Some((start, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(resolve("bytes=0-9", 100).unwrap(), Some((0, 10)));
        assert_eq!(resolve("bytes=90-200", 100).unwrap(), Some((90, 100)));
        assert_eq!(resolve("bytes=10-", 100).unwrap(), Some((10, 100)));
        assert_eq!(resolve("bytes=-10", 100).unwrap(), Some((90, 100)));
        assert_eq!(resolve("bytes=-200", 100).unwrap(), Some((0, 100)));
        assert_eq!(resolve("bytes=5-1", 100).unwrap(), None);
        assert_eq!(resolve("bytes=0-1,5-6", 100).unwrap(), None);
        assert_eq!(resolve("items=0-1", 100).unwrap(), None);
        assert!(matches!(
            resolve("bytes=100-", 100),
            Err(S3Error::InvalidRange(100))
        ));
        assert!(matches!(
            resolve("bytes=0-", 0),
            Err(S3Error::InvalidRange(0))
        ));
        assert!(matches!(
            resolve("bytes=x-1", 100),
            Err(S3Error::InvalidArgument(_))
        ));
    }
}
