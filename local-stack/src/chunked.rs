//! `aws-chunked` request bodies (what the AWS CLI and recent boto3 send for
//! uploads with a streaming signature or trailing checksum): decoded into
//! the object's bytes. Signatures and checksums are not verified: this
//! server checks no credentials at all.

use bytes::{Bytes, BytesMut};

use crate::error::S3Error;

/// Whether a request body is `aws-chunked` framed.
pub fn is_aws_chunked(headers: &axum::http::HeaderMap) -> bool {
    let sha = headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let enc = headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    sha.starts_with("STREAMING-") || enc.split(',').any(|e| e.trim() == "aws-chunked")
}

pub fn decode(body: &[u8]) -> Result<Bytes, S3Error> {
    let bad = |why: &str| S3Error::InvalidArgument(format!("malformed aws-chunked body: {why}"));
    let mut out = BytesMut::with_capacity(body.len());
    let mut rest = body;
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| bad("no chunk header"))?;
        let header =
            std::str::from_utf8(&rest[..line_end]).map_err(|_| bad("chunk header is not text"))?;
        let size_hex = header.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| bad("chunk size is not hex"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(out.freeze()); // trailers (checksums) follow; ignored
        }
        if rest.len() < size + 2 {
            return Err(bad("chunk shorter than its size"));
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_signed_and_trailer_forms() {
        let body = b"5;chunk-signature=abc\r\nhello\r\n6;chunk-signature=def\r\n world\r\n0;chunk-signature=0\r\n\r\n";
        assert_eq!(&decode(body).unwrap()[..], b"hello world");
        let body = b"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AAAA\r\n\r\n";
        assert_eq!(&decode(body).unwrap()[..], b"abc");
        assert!(decode(b"zz\r\n").is_err());
        assert!(decode(b"10\r\nshort\r\n").is_err());
    }
}
