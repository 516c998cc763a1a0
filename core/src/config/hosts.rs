//! `[[hosts]]`: the other machines' cores this core links to, each a name and the command
//! whose stdin and stdout reach that core (`ssh -T me@gpu-box shepherd link`). The names
//! are checked here, so a bad one is refused with its key like any other setting.

use serde::{Deserialize, Serialize};

pub use crate::protocol::MAX_HOST_NAME;

/// One `[[hosts]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostEntry {
    /// How listings and selectors name the host (`gpu`, as in `gpu:app@main`).
    pub name: HostName,
    /// The link command: its stdin and stdout reach the other machine's `shepherd link`.
    pub command: LinkCommand,
}

/// A host's name: 1 to 32 lowercase letters, digits and `-`, starting with a letter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HostName(String);

impl HostName {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` is a host name: 1 to [`MAX_HOST_NAME`] lowercase letters, digits and
    /// `-`, starting with a letter.
    pub fn is_valid(name: &str) -> bool {
        crate::protocol::is_host_name(name)
    }
}

impl TryFrom<String> for HostName {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        match HostName::is_valid(&name) {
            true => Ok(HostName(name)),
            false => Err(format!(
                "{name:?} is not a host name: 1 to {MAX_HOST_NAME} lowercase letters, digits and `-`, starting with a letter (`gpu`, `build-1`)"
            )),
        }
    }
}

impl From<HostName> for String {
    fn from(name: HostName) -> String {
        name.0
    }
}

impl std::fmt::Display for HostName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The link command, a program and its arguments (no shell): at least the program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct LinkCommand(Vec<String>);

impl LinkCommand {
    pub fn argv(&self) -> &[String] {
        &self.0
    }
}

impl TryFrom<Vec<String>> for LinkCommand {
    type Error = String;

    fn try_from(argv: Vec<String>) -> Result<Self, String> {
        match argv.first() {
            Some(program) if !program.trim().is_empty() => Ok(LinkCommand(argv)),
            _ => Err("the link command needs at least a program: [\"ssh\", \"-T\", \"me@gpu-box\", \"shepherd\", \"link\"]".to_string()),
        }
    }
}

impl From<LinkCommand> for Vec<String> {
    fn from(command: LinkCommand) -> Vec<String> {
        command.0
    }
}

/// The first name two entries share, if any.
pub fn duplicate_name(hosts: &[HostEntry]) -> Option<&HostName> {
    hosts
        .iter()
        .enumerate()
        .find(|(i, h)| hosts[..*i].iter().any(|o| o.name == h.name))
        .map(|(_, h)| &h.name)
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn hosts_are_named_and_reached_by_a_command() {
        let config = Config::from_toml(
            r#"
            [[hosts]]
            name = "gpu"
            command = ["ssh", "-T", "me@gpu-box", "shepherd", "link"]
            "#,
            "test",
        )
        .unwrap();
        assert_eq!(config.hosts.len(), 1);
        assert_eq!(config.hosts[0].name.as_str(), "gpu");
        assert_eq!(config.hosts[0].command.argv()[0], "ssh");
        assert!(Config::from_toml("", "test").unwrap().hosts.is_empty());
    }

    #[test]
    fn a_bad_name_an_empty_command_or_a_repeated_name_is_refused_with_its_key() {
        let bad = |text: &str| Config::from_toml(text, "test").unwrap_err().to_string();
        let e = bad("[[hosts]]\nname = \"GPU box\"\ncommand = [\"ssh\"]");
        assert!(
            e.contains("hosts[0].name") && e.contains("not a host name"),
            "{e}"
        );
        let e = bad("[[hosts]]\nname = \"gpu\"\ncommand = []");
        assert!(
            e.contains("hosts[0].command") && e.contains("at least a program"),
            "{e}"
        );
        let e = bad(
            "[[hosts]]\nname = \"gpu\"\ncommand = [\"a\"]\n[[hosts]]\nname = \"gpu\"\ncommand = [\"b\"]",
        );
        assert!(
            e.contains("`hosts`") && e.contains("two hosts are named `gpu`"),
            "{e}"
        );
    }
}
