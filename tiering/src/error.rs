//! Errors at the tiering crate's boundary.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TieringError {
    #[error("reading local segment file {path}: {source}")]
    Local {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),
    #[error("uploaded object {key} failed verification: {message}")]
    Verification { key: String, message: String },
    #[error("catalog: {0}")]
    Catalog(#[from] strata_catalog::CatalogError),
}

impl TieringError {
    /// Whether retrying the same upload may succeed.
    pub fn is_retriable(&self) -> bool {
        match self {
            TieringError::ObjectStore(_) | TieringError::Verification { .. } => true,
            TieringError::Local { .. } => false,
            // Fencing is final for this writer.
            TieringError::Catalog(strata_catalog::CatalogError::ObjectStore(_)) => true,
            TieringError::Catalog(_) => false,
        }
    }
}
