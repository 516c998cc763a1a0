//! The TypeScript of `pi-ext/wire/generated/`, written from a [`Wire`]: the closed sets of
//! names as union types with their lists (`names.ts`), the records as interfaces
//! (`records.ts`), each side's messages as interfaces with its union and `type` list
//! (`client.ts`, `server.ts`), and the checked decoders, one `wire/fields.ts` reader per
//! field (`decoders.ts`). Plain string building; the output is deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::model::{Enum, Field, Message, Presence, Record, Side, Ty, Wire};
use crate::protocol::{ClientMsg, ErrorCode, PROTOCOL_VERSION};

/// Decoders up to this long stay on one line.
const ONE_LINE: usize = 120;

/// Every generated file: its name in `pi-ext/wire/generated/` and its text.
pub(super) fn typescript(wire: &Wire, command: &str) -> Vec<(&'static str, String)> {
    let client_kinds: BTreeSet<&str> = wire.client.iter().map(|m| m.kind.as_str()).collect();
    let client_names = message_names(&wire.client, &BTreeSet::new());
    let server_names = message_names(&wire.server, &client_kinds);

    let mut names = File::new(
        "names.ts",
        "The closed sets of names of the protocol, each with its list, and the error codes.",
    );
    names.line(&format!(
        "export const PROTOCOL_VERSION = {PROTOCOL_VERSION};"
    ));
    wire.enums.iter().for_each(|e| names.enumeration(e));
    names.error_codes();

    let mut records = File::new(
        "records.ts",
        "The records inside messages, as the core writes them (decoders.ts reads them).",
    );
    wire.records.iter().for_each(|r| records.record(r));

    let mut client = File::new(
        "client.ts",
        "Client → core: every message a client sends, its union and its list of types.",
    );
    client.messages(Side::Client, &wire.client, &client_names);
    client.replies(&wire.client, &client_names);
    let mut server = File::new(
        "server.ts",
        "Core → client: every response, error and event, its union and its list of types.",
    );
    server.messages(Side::Server, &wire.server, &server_names);

    let mut decoders = File::new(
        "decoders.ts",
        "The checked decoders: one wire/fields.ts reader per field of each record, and\n\
         each side's table of message bodies (every field but `type`) for wire/decode.ts.",
    );
    wire.records.iter().for_each(|r| decoders.record_decoder(r));
    decoders.bodies(Side::Client, &wire.client);
    decoders.bodies(Side::Server, &wire.server);

    [names, records, client, server, decoders]
        .into_iter()
        .map(|file| (file.name, file.finish(command)))
        .collect()
}

/// One generated file: its text and what it imports from where.
struct File {
    /// Its name, so it never imports from itself.
    name: &'static str,
    about: &'static str,
    text: String,
    /// Module → (name, whether it is a type) → imported.
    imports: BTreeMap<&'static str, BTreeSet<(bool, String)>>,
}

impl File {
    fn new(name: &'static str, about: &'static str) -> File {
        File {
            name,
            about,
            text: String::new(),
            imports: BTreeMap::new(),
        }
    }

    fn finish(self, command: &str) -> String {
        let mut head = String::new();
        for line in self.about.lines() {
            let _ = writeln!(head, "// {line}");
        }
        let _ = writeln!(
            head,
            "//\n// Generated from the Rust protocol types (core/src/protocol/) by\n\
             // core/src/protocol/wire_gen: do not edit. After changing a protocol type run\n\
             //   {command}\n\
             // (CI fails while a generated file is stale).\n"
        );
        for (module, names) in &self.imports {
            let only_types = names.iter().all(|(is_type, _)| *is_type);
            let list: Vec<String> = names
                .iter()
                .map(|(is_type, name)| match *is_type && !only_types {
                    true => format!("type {name}"),
                    false => name.clone(),
                })
                .collect();
            let import = if only_types { "import type" } else { "import" };
            let one = format!("{import} {{ {} }} from \"{module}\";", list.join(", "));
            if one.len() <= ONE_LINE {
                let _ = writeln!(head, "{one}");
            } else {
                let _ = writeln!(
                    head,
                    "{import} {{\n  {},\n}} from \"{module}\";",
                    list.join(",\n  ")
                );
            }
        }
        if !self.imports.is_empty() {
            head.push('\n');
        }
        head + self.text.trim_start_matches('\n')
    }

    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    fn import(&mut self, module: &'static str, name: &str, is_type: bool) {
        if module.strip_prefix("./") == Some(self.name) {
            return;
        }
        self.imports
            .entry(module)
            .or_default()
            .insert((is_type, name.to_owned()));
    }

    fn doc(&mut self, indent: &str, doc: Option<&str>) {
        let Some(doc) = doc else { return };
        let doc = doc.replace("*/", "*\\/");
        if !doc.contains('\n') && doc.len() + indent.len() < 110 {
            self.line(&format!("{indent}/** {doc} */"));
            return;
        }
        self.line(&format!("{indent}/**"));
        for l in doc.lines() {
            self.line(format!("{indent} * {l}").trim_end());
        }
        self.line(&format!("{indent} */"));
    }

    fn enumeration(&mut self, e: &Enum) {
        let mut doc = e.doc.clone().unwrap_or_default();
        if e.values.iter().any(|(_, d)| d.is_some()) {
            doc.push('\n');
            for (value, d) in &e.values {
                let d = d.as_deref().unwrap_or("").replace('\n', "\n  ");
                let _ = write!(doc, "\n- `{value}`: {d}");
            }
        }
        self.line("");
        self.doc("", Some(doc.trim()).filter(|d| !d.is_empty()));
        let values: Vec<String> = e.values.iter().map(|(v, _)| format!("\"{v}\"")).collect();
        let union = format!("export type {} = {};", e.name, values.join(" | "));
        if union.len() <= ONE_LINE {
            self.line(&union);
        } else {
            self.line(&format!("export type {} =", e.name));
            for v in &values {
                self.line(&format!("  | {v}"));
            }
            self.text.pop();
            self.line(";");
        }
        let head = format!(
            "export const {}: readonly {}[] = [",
            list_name(&e.name),
            e.name
        );
        self.list(&head, &values, "];");
    }

    /// `head`, the items separated by commas, `tail`: on one line when it fits, else one
    /// item a line.
    fn list(&mut self, head: &str, items: &[String], tail: &str) {
        let one = format!("{head}{}{tail}", items.join(", "));
        if one.len() <= ONE_LINE {
            self.line(&one);
            return;
        }
        self.line(head);
        for item in items {
            self.line(&format!("  {item},"));
        }
        self.line(tail);
    }

    fn error_codes(&mut self) {
        let quoted = |code: ErrorCode| format!("\"{}\"", code.as_str());
        let closing: Vec<String> = ErrorCode::all()
            .filter(|c| c.closes_connection())
            .map(quoted)
            .collect();
        self.line("");
        self.doc(
            "",
            Some("The stable error codes (core/src/protocol/error_code.rs)."),
        );
        let all: Vec<String> = ErrorCode::all().map(quoted).collect();
        self.list("export const ERROR_CODES = [", &all, "] as const;");
        self.line("export type ErrorCode = (typeof ERROR_CODES)[number];");
        self.doc(
            "",
            Some(
                "A code this client may not know yet: new codes are a compatible protocol change.",
            ),
        );
        self.line("export type WireErrorCode = ErrorCode | (string & {});");
        self.doc(
            "",
            Some("Codes after which the core closes the connection."),
        );
        let head = "export const CLOSING_ERROR_CODES: ReadonlySet<string> = new Set<ErrorCode>([";
        self.list(head, &closing, "]);");
    }

    fn record(&mut self, r: &Record) {
        self.line("");
        self.interface(r.doc.as_deref(), &r.name, None, &r.fields);
    }

    fn interface(&mut self, doc: Option<&str>, name: &str, kind: Option<&str>, fields: &[Field]) {
        self.doc("", doc);
        self.line(&format!("export interface {name} {{"));
        if let Some(kind) = kind {
            self.line(&format!("  type: \"{kind}\";"));
        }
        for f in fields {
            self.doc("  ", f.doc.as_deref());
            let ty = self.ts_type(&f.ty);
            let or_null = if f.ty == Ty::Json { "" } else { " | null" };
            let line = match f.presence {
                Presence::Required | Presence::Default(_) => format!("{}: {ty};", f.name),
                Presence::Nullable => format!("{}: {ty}{or_null};", f.name),
                Presence::Omitted { .. } | Presence::Maybe => format!("{}?: {ty};", f.name),
                Presence::MaybeNull => format!("{}?: {ty}{or_null};", f.name),
            };
            self.line(&format!("  {line}"));
        }
        self.line("}");
    }

    /// One side's message interfaces, their union and the list of their types.
    fn messages(&mut self, side: Side, msgs: &[Message], names: &[String]) {
        let (union, types) = side_names(side);
        for (m, name) in msgs.iter().zip(names) {
            self.line("");
            self.interface(m.doc.as_deref(), name, Some(&m.kind), &m.fields);
        }
        self.line("");
        self.line(&format!("export type {union} ="));
        for name in names {
            self.line(&format!("  | {name}"));
        }
        self.text.pop();
        self.line(";");
        self.line("");
        let kinds: Vec<String> = msgs.iter().map(|m| format!("\"{}\"", m.kind)).collect();
        self.list(
            &format!("export const {types}: readonly {union}[\"type\"][] = ["),
            &kinds,
            "];",
        );
    }

    /// The requests (the client messages the core answers), and each one's reply as its
    /// declaration names it ([`ClientMsg::REPLIES`]): the `type` of the response, and the
    /// type that reads it.
    fn replies(&mut self, msgs: &[Message], names: &[String]) {
        let replies: BTreeMap<&str, &str> = ClientMsg::REPLIES.iter().copied().collect();
        let notices: Vec<&str> = msgs
            .iter()
            .zip(names)
            .filter(|(m, _)| !replies.contains_key(m.kind.as_str()))
            .map(|(_, name)| name.as_str())
            .collect();
        self.import("./server.ts", "ServerMsg", true);
        self.line("");
        self.line("/** The messages the core answers: every client message but the notices. */");
        self.line(&format!(
            "export type RequestMsg = Exclude<ClientMsg, {}>;",
            notices.join(" | ")
        ));
        self.line("");
        self.line("/**");
        self.line(
            " * Each request's reply: the `type` of the response the core answers it with (or an",
        );
        self.line(" * `error`), as the request's declaration in the Rust table names it.");
        self.line(" */");
        self.line("export const REPLY_TYPES = {");
        for m in msgs {
            if let Some(reply) = replies.get(m.kind.as_str()) {
                self.line(&format!("  {}: \"{reply}\",", m.kind));
            }
        }
        self.line("} as const satisfies Record<RequestMsg[\"type\"], ServerMsg[\"type\"]>;");
        self.line("");
        self.line("/** The response that answers a request of type `T`. */");
        self.line("export type ReplyOf<T extends RequestMsg[\"type\"]> = Extract<ServerMsg, { type: (typeof REPLY_TYPES)[T] }>;");
    }

    fn record_decoder(&mut self, r: &Record) {
        self.import("./records.ts", &r.name, true);
        self.import("../fields.ts", "Conv", true);
        self.import("../fields.ts", "record", false);
        let readers: Vec<String> = r.fields.iter().map(|f| self.reader(f)).collect();
        let head = format!(
            "const {}: Conv<{}> = record({{",
            decoder_name(&r.name),
            r.name
        );
        self.line("");
        self.fields_of(&head, &r.fields, &readers, ""); // no trailing comma after `})`
        self.text.truncate(self.text.len() - 1);
        self.line(";");
    }

    /// `head` then `name: reader` for each field, on one line when it fits, then `})`.
    fn fields_of(&mut self, head: &str, fields: &[Field], readers: &[String], indent: &str) {
        let pairs: Vec<String> = fields
            .iter()
            .zip(readers)
            .map(|(f, r)| format!("{}: {r}", f.name))
            .collect();
        let one = format!("{indent}{head} {} }})", pairs.join(", "));
        if one.len() <= ONE_LINE {
            self.line(&one);
            return;
        }
        self.line(&format!("{indent}{head}"));
        for pair in pairs {
            self.line(&format!("{indent}  {pair},"));
        }
        self.line(&format!("{indent}}})"));
    }

    /// One side's body decoders, by `type`.
    fn bodies(&mut self, side: Side, msgs: &[Message]) {
        let (union, _) = side_names(side);
        let table = match side {
            Side::Client => "CLIENT_BODIES",
            Side::Server => "SERVER_BODIES",
        };
        let module = match side {
            Side::Client => "./client.ts",
            Side::Server => "./server.ts",
        };
        self.import(module, union, true);
        self.import("../fields.ts", "Bodies", true);
        self.line("");
        self.line(&format!("export const {table}: Bodies<{union}> = {{"));
        for m in msgs {
            let readers: Vec<String> = m.fields.iter().map(|f| self.reader(f)).collect();
            self.fields_of(&format!("{}: record({{", m.kind), &m.fields, &readers, "  ");
            self.text.truncate(self.text.len() - 1);
            self.line(",");
        }
        self.line("};");
    }

    /// The fields.ts reader of one field.
    fn reader(&mut self, f: &Field) -> String {
        let conv = self.conv(&f.ty);
        let (reader, arg) = match &f.presence {
            Presence::Required => ("req", conv),
            Presence::Nullable => ("nullable", conv),
            Presence::Omitted { nullable: true } => ("optional", conv),
            Presence::Omitted { nullable: false } | Presence::Maybe => ("maybe", conv),
            Presence::MaybeNull => ("maybeNull", conv),
            Presence::Default(value) => {
                let typed = match &f.ty {
                    Ty::Enum(name) => {
                        self.import("./names.ts", name, true);
                        format!("(): {name} => ")
                    }
                    _ => "() => ".to_owned(),
                };
                ("withDefault", format!("{conv}, {typed}{value}"))
            }
        };
        self.import("../fields.ts", reader, false);
        format!("{reader}({arg})")
    }

    /// The fields.ts converter of one value.
    fn conv(&mut self, ty: &Ty) -> String {
        let simple = match ty {
            Ty::Str | Ty::ErrorCode => "str",
            Ty::U32 => "u32",
            Ty::U64 => "u64",
            Ty::F64 => "f64",
            Ty::Bool => "bool",
            Ty::Json => "json",
            Ty::Enum(name) => {
                self.import("../fields.ts", "oneOf", false);
                self.import("./names.ts", &list_name(name), false);
                return format!("oneOf({})", list_name(name));
            }
            Ty::Record(name) => return decoder_name(name),
            Ty::Array(item) => {
                self.import("../fields.ts", "arrayOf", false);
                return format!("arrayOf({})", self.conv(item));
            }
        };
        self.import("../fields.ts", simple, false);
        simple.to_owned()
    }

    /// The TypeScript type of one value.
    fn ts_type(&mut self, ty: &Ty) -> String {
        match ty {
            Ty::Str => "string".into(),
            Ty::U32 | Ty::U64 | Ty::F64 => "number".into(),
            Ty::Bool => "boolean".into(),
            Ty::Json => {
                self.import("../fields.ts", "Json", true);
                "Json".into()
            }
            Ty::ErrorCode => {
                self.import("./names.ts", "WireErrorCode", true);
                "WireErrorCode".into()
            }
            Ty::Enum(name) => {
                self.import("./names.ts", name, true);
                name.clone()
            }
            Ty::Record(name) => {
                self.import("./records.ts", name, true);
                name.clone()
            }
            Ty::Array(item) => format!("{}[]", self.ts_type(item)),
        }
    }
}

fn side_names(side: Side) -> (&'static str, &'static str) {
    match side {
        Side::Client => ("ClientMsg", "CLIENT_TYPES"),
        Side::Server => ("ServerMsg", "SERVER_TYPES"),
    }
}

/// `DeliveryKind` → `DELIVERY_KINDS`, `IntegrationStatus` → `INTEGRATION_STATUSES`.
fn list_name(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out.push_str(if out.ends_with('S') { "ES" } else { "S" });
    out
}

/// `SessionInfo` → `sessionInfo`.
fn decoder_name(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// `list_sessions` → `ListSessionsMsg`; a core message whose `type` a client message also
/// has (`usage`) → `UsageReplyMsg`.
fn message_names(msgs: &[Message], taken: &BTreeSet<&str>) -> Vec<String> {
    msgs.iter()
        .map(|m| {
            let pascal: String = m
                .kind
                .split('_')
                .map(|w| {
                    let mut c = w.chars();
                    c.next()
                        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                        .unwrap_or_default()
                })
                .collect();
            let suffix = if taken.contains(m.kind.as_str()) {
                "ReplyMsg"
            } else {
                "Msg"
            };
            pascal + suffix
        })
        .collect()
}
