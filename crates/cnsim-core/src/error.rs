//! The one error type of a configuration: the parameter at fault and what is
//! wrong with it. Below both the parameter declarations ([`crate::params`])
//! and the engine configuration ([`crate::config`]) that report it.

use std::fmt;

/// A configuration error: the parameter at fault as a dotted path in the
/// user's names (`timely.min_rate_mbps`, `events[3].node`, `links`; a rule
/// over several parameters names them all, `pause.xon_bytes /
/// pause.xoff_bytes`; empty when no parameter is) and what is wrong with it.
/// The two are kept apart from where the error is made: the path is never
/// read back from the text. Shown to the user as one line, `path: message`;
/// the Python layer keeps the path (`EngineConfigError.path`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.line())]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// A deserialisation error under `prefix` (a table's name, or empty),
    /// naming the field where it happened.
    pub fn at<E: fmt::Display>(prefix: &str, e: serde_path_to_error::Error<E>) -> ConfigError {
        let inner = e.path().to_string();
        let path = match (prefix.is_empty(), inner == ".") {
            (true, _) => inner,
            (false, true) => prefix.to_string(),
            (false, false) => format!("{prefix}.{inner}"),
        };
        ConfigError::new(path, e.into_inner().to_string())
    }

    /// The one line shown to users.
    pub fn line(&self) -> String {
        if self.path.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.path, self.message)
        }
    }
}

/// Fails with the error at `path` (a parameter's dotted name, or the names
/// of every parameter a rule involves joined by ` / `; empty when no single
/// parameter is at fault): `Err(ConfigError::new(path, message))`.
pub fn fail<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::new(path, message))
}
