//! S3 error responses: one enum whose variants are S3's error codes, with the
//! HTTP status each one is answered with. Owns the mapping only; it never
//! decides whether something is an error.

use axum::http::StatusCode;

#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    #[error("The specified bucket does not exist: {0}")]
    NoSuchBucket(String),
    #[error("The specified key does not exist: {0}")]
    NoSuchKey(String),
    #[error("The specified multipart upload does not exist: {0}")]
    NoSuchUpload(String),
    #[error("At least one of the preconditions you specified did not hold")]
    PreconditionFailed,
    #[error("The requested range is not satisfiable (object size {0})")]
    InvalidRange(u64),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    InvalidBucketName(String),
    #[error("One or more of the specified parts could not be found or its entity tag did not match: {0}")]
    InvalidPart(String),
    #[error("The list of parts was not in ascending order")]
    InvalidPartOrder,
    #[error("Part {0} is smaller than the minimum allowed object size of 5 MiB")]
    EntityTooSmall(u32),
    #[error("The XML you provided was not well-formed: {0}")]
    MalformedXml(String),
    #[error("{0}")]
    KeyConflict(String),
    #[error("The bucket you tried to delete is not empty")]
    BucketNotEmpty,
    #[error("This server does not implement {0}")]
    NotImplemented(String),
    #[error("internal error: {0}")]
    Internal(#[from] std::io::Error),
}

impl S3Error {
    pub fn status(&self) -> StatusCode {
        use S3Error::*;
        match self {
            NoSuchBucket(_) | NoSuchKey(_) | NoSuchUpload(_) => StatusCode::NOT_FOUND,
            PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            InvalidRange(_) => StatusCode::RANGE_NOT_SATISFIABLE,
            InvalidArgument(_) | InvalidBucketName(_) | InvalidPart(_) | InvalidPartOrder
            | EntityTooSmall(_) | MalformedXml(_) => StatusCode::BAD_REQUEST,
            KeyConflict(_) | BucketNotEmpty => StatusCode::CONFLICT,
            NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        use S3Error::*;
        match self {
            NoSuchBucket(_) => "NoSuchBucket",
            NoSuchKey(_) => "NoSuchKey",
            NoSuchUpload(_) => "NoSuchUpload",
            PreconditionFailed => "PreconditionFailed",
            InvalidRange(_) => "InvalidRange",
            InvalidArgument(_) => "InvalidArgument",
            InvalidBucketName(_) => "InvalidBucketName",
            InvalidPart(_) => "InvalidPart",
            InvalidPartOrder => "InvalidPartOrder",
            EntityTooSmall(_) => "EntityTooSmall",
            MalformedXml(_) => "MalformedXML",
            KeyConflict(_) => "KeyConflict",
            BucketNotEmpty => "BucketNotEmpty",
            NotImplemented(_) => "NotImplemented",
            Internal(_) => "InternalError",
        }
    }
}

pub type S3Result<T> = Result<T, S3Error>;
