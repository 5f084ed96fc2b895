//! The one error type of a configuration: the parameter at fault and what is
//! wrong with it. Below both the parameter declarations ([`crate::params`])
//! and the engine configuration ([`crate::config`]) that report it.

use std::fmt;

/// A configuration error: the parameter at fault as a dotted path in the
/// user's names (`timely.min_rate_mbps`, `events[3].node`, `links`; empty
/// when no single parameter is) and what is wrong with it. Shown to the user
/// as one line, `path: message`; the Python layer keeps the path.
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

    /// An error from its one-line text `path: message`, the form every
    /// engine check writes: the path is what comes before the first ": "
    /// when it is a parameter's name (no spaces), else the error has none.
    pub fn parse(text: impl Into<String>) -> ConfigError {
        let text = text.into();
        match text.split_once(": ") {
            Some((path, message)) if !path.is_empty() && !path.contains(char::is_whitespace) => ConfigError::new(path, message),
            _ => ConfigError::new("", text),
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

pub fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::parse(msg))
}
