//! Client settings: the `racelens` section, read from `initializationOptions`,
//! `workspace/configuration` and `workspace/didChangeConfiguration`.
//!
//! Parsing is lenient: unknown keys are ignored and a value of the wrong type
//! keeps the previous one, so a typo in an editor's settings never stops the
//! server.

use serde_json::Value;
use tower_lsp_server::ls_types::DiagnosticSeverity;

/// The effective settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub enable: bool,
    /// Severity of may-races; `None` defers to `racelens.toml`, then to
    /// information.
    pub may_severity: Option<DiagnosticSeverity>,
    /// Show may races with no concrete object (type-based, wild memory);
    /// `None` defers to `racelens.toml`, then to hiding them.
    pub show_unresolved: Option<bool>,
    /// An explicit `racelens.toml`; empty means `<root>/racelens.toml`.
    pub config_path: String,
    pub trace_server: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enable: true,
            may_severity: None,
            show_unresolved: None,
            config_path: String::new(),
            trace_server: "off".into(),
        }
    }
}

impl Settings {
    /// Applies a settings object on top of these settings. Accepts both the
    /// bare section (`{"enable": ..}`) and the wrapped one
    /// (`{"racelens": {"enable": ..}}`); `null` changes nothing.
    pub fn update(&mut self, value: &Value) {
        let section = value.get("racelens").unwrap_or(value);
        let Some(obj) = section.as_object() else {
            return;
        };
        if let Some(b) = obj.get("enable").and_then(Value::as_bool) {
            self.enable = b;
        }
        if let Some(s) = obj.get("maySeverity").and_then(Value::as_str) {
            match parse_severity(s) {
                Some(sev) => self.may_severity = Some(sev),
                None => tracing::warn!("ignoring unknown racelens.maySeverity `{s}`"),
            }
        }
        if let Some(b) = obj.get("showUnresolved").and_then(Value::as_bool) {
            self.show_unresolved = Some(b);
        }
        if let Some(s) = obj.get("configPath").and_then(Value::as_str) {
            self.config_path = s.to_string();
        }
        let trace = obj
            .get("trace")
            .and_then(|t| t.get("server"))
            .or_else(|| obj.get("trace.server"));
        if let Some(s) = trace.and_then(Value::as_str) {
            self.trace_server = s.to_string();
        }
    }
}

/// `information`, `warning`, `hint` (and `error`, accepted from `racelens.toml`).
pub fn parse_severity(s: &str) -> Option<DiagnosticSeverity> {
    match s.to_ascii_lowercase().as_str() {
        "information" | "info" => Some(DiagnosticSeverity::INFORMATION),
        "warning" => Some(DiagnosticSeverity::WARNING),
        "hint" => Some(DiagnosticSeverity::HINT),
        "error" => Some(DiagnosticSeverity::ERROR),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn update_accepts_bare_and_wrapped_sections_and_ignores_junk() {
        let mut s = Settings::default();
        s.update(
            &json!({"enable": false, "maySeverity": "warning", "trace": {"server": "verbose"}}),
        );
        assert!(!s.enable);
        assert_eq!(s.may_severity, Some(DiagnosticSeverity::WARNING));
        assert_eq!(s.trace_server, "verbose");
        s.update(&json!({"racelens": {"enable": true, "configPath": "x.toml", "maySeverity": 3}}));
        assert!(s.enable);
        assert_eq!(s.config_path, "x.toml");
        assert_eq!(s.may_severity, Some(DiagnosticSeverity::WARNING));
        s.update(&Value::Null);
        assert!(s.enable);
    }
}
