//! # Which phone bridges this build carries
//!
//! Telegram and Matrix are cargo features (`telegram`, `matrix`; both on by default), so a
//! shepherd for one phone need not build the other's SDK. A configuration that asks for a
//! bridge the build lacks is refused by [`crate::validate`] with what to do, never
//! silently run without it. [`compiled_out`] takes the compiled set as a parameter, so the
//! refusal is tested in the default build too.

use shepherd_core::config::Config;

use crate::BridgeError;

/// A phone platform shepherd can bridge to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BridgeKind {
    Telegram,
    Matrix,
}

impl BridgeKind {
    /// The config section and cargo feature: `telegram`, `matrix`.
    pub fn name(self) -> &'static str {
        match self {
            BridgeKind::Telegram => "telegram",
            BridgeKind::Matrix => "matrix",
        }
    }

    /// The environment variables that configure it, as said in a refusal.
    pub fn env(self) -> &'static str {
        match self {
            BridgeKind::Telegram => "SHEPHERD_TELEGRAM_TOKEN, SHEPHERD_TELEGRAM__*",
            BridgeKind::Matrix => "SHEPHERD_MATRIX__*",
        }
    }

    /// The platform's name in prose: `Telegram`, `Matrix`.
    pub fn title(self) -> &'static str {
        match self {
            BridgeKind::Telegram => "Telegram",
            BridgeKind::Matrix => "Matrix",
        }
    }
}

/// The bridges a build carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compiled {
    pub telegram: bool,
    pub matrix: bool,
}

impl Compiled {
    /// What this binary was built with (its cargo features).
    pub const THIS_BUILD: Compiled = Compiled {
        telegram: cfg!(feature = "telegram"),
        matrix: cfg!(feature = "matrix"),
    };

    /// Whether `kind` is compiled in.
    pub fn has(self, kind: BridgeKind) -> bool {
        match kind {
            BridgeKind::Telegram => self.telegram,
            BridgeKind::Matrix => self.matrix,
        }
    }
}

/// The bridges `config` asks for (has a section for, from the file or the environment).
pub fn configured(config: &Config) -> Vec<BridgeKind> {
    let mut kinds = Vec::new();
    if config.telegram.is_some() {
        kinds.push(BridgeKind::Telegram);
    }
    if config.matrix.is_some() {
        kinds.push(BridgeKind::Matrix);
    }
    kinds
}

/// The refusal for the first bridge `config` asks for that `compiled` lacks; `None` when
/// every configured bridge is built in.
pub fn compiled_out(config: &Config, compiled: Compiled) -> Option<BridgeError> {
    configured(config)
        .into_iter()
        .find(|kind| !compiled.has(*kind))
        .map(BridgeError::NotBuilt)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: Compiled = Compiled {
        telegram: false,
        matrix: false,
    };
    const ALL: Compiled = Compiled {
        telegram: true,
        matrix: true,
    };

    fn config(toml: &str) -> Config {
        Config::from_toml(toml, "test.toml").expect("a valid config")
    }

    #[test]
    fn a_bridge_compiled_out_is_refused_with_what_to_do() {
        let both = config("[telegram]\ntoken = \"1:x\"\n[matrix]\nuser_id = \"@s:x\"\n");
        let matrix_only = Compiled {
            matrix: true,
            ..NONE
        };
        let err = compiled_out(&both, matrix_only).expect("telegram is not built in");
        let said = err.to_string();
        assert!(
            said.starts_with("[telegram]: this shepherd was built without Telegram support"),
            "{said}"
        );
        assert!(
            said.contains("cargo build --release --features telegram"),
            "{said}"
        );
        assert!(said.contains("remove the [telegram] section"), "{said}");

        let telegram_only = Compiled {
            telegram: true,
            ..NONE
        };
        let said = compiled_out(&both, telegram_only).unwrap().to_string();
        assert!(said.contains("without Matrix support"), "{said}");
        assert!(said.contains("--features matrix"), "{said}");
        assert!(said.contains("SHEPHERD_MATRIX__"), "{said}");
    }

    #[test]
    fn what_is_built_in_or_not_configured_passes() {
        let both = config("[telegram]\ntoken = \"1:x\"\n[matrix]\nuser_id = \"@s:x\"\n");
        assert!(compiled_out(&both, ALL).is_none());
        assert!(compiled_out(&Config::default(), NONE).is_none());
        let matrix = config("[matrix]\nuser_id = \"@s:x\"\n");
        let matrix_only = Compiled {
            matrix: true,
            ..NONE
        };
        assert!(compiled_out(&matrix, matrix_only).is_none());
        assert!(compiled_out(&matrix, NONE).is_some());
    }

    #[test]
    fn the_default_build_carries_both_bridges() {
        // `default = ["telegram", "matrix"]`: the default test run is this build.
        if cfg!(all(feature = "telegram", feature = "matrix")) {
            assert_eq!(Compiled::THIS_BUILD, ALL);
        }
        assert_eq!(
            Compiled::THIS_BUILD.has(BridgeKind::Telegram),
            cfg!(feature = "telegram")
        );
        assert_eq!(
            Compiled::THIS_BUILD.has(BridgeKind::Matrix),
            cfg!(feature = "matrix")
        );
    }
}
