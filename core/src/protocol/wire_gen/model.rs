//! The protocol as the TypeScript wire needs it, read from the JSON Schema that schemars
//! derives from the Rust types (both contracts: what the Rust side writes, and what it
//! accepts): the closed sets of names, the records in the order they depend on each other,
//! and every message of each side with its fields. Each field says what absence and null
//! mean for it, following serde's attributes (`Option`, `default`, `skip_serializing_if`),
//! and that differs by side: records the core sends are read normalized (an absent
//! `Option` is null, an absent default its value), messages a client sends keep what they
//! were built with. `pi-ext/wire/fields.ts` has one reader per [`Presence`].

use std::collections::HashMap;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::protocol::{ClientMsg, ServerMsg};

/// Who sends a record or a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    /// A client (Pi, CLI, bridge) to the core.
    Client,
    /// The core to a client.
    Server,
}

/// A field's value, as TypeScript reads it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ty {
    Str,
    U32,
    U64,
    F64,
    Bool,
    /// Any JSON value (`serde_json::Value`).
    Json,
    /// An error code, read as any string: a newer core may send one this client does not
    /// know (adding a code is a compatible change).
    ErrorCode,
    /// One of a closed set of names.
    Enum(String),
    Record(String),
    Array(Box<Ty>),
}

/// What absence and null mean for one field.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Presence {
    /// Always there, never null.
    Required,
    /// The core's `Option<T>`: absent or null reads as null.
    Nullable,
    /// The core's `#[serde(default)] T`: absent reads as the default.
    Default(Value),
    /// The core leaves it out (`skip_serializing_if`): absent stays absent, and so does
    /// null for an `Option`.
    Omitted { nullable: bool },
    /// A client's `Option<T>`: absent, null or a value, kept as sent.
    MaybeNull,
    /// A client's `#[serde(default)] T`: absent or a value, never null.
    Maybe,
}

#[derive(Debug)]
pub(super) struct Field {
    pub name: String,
    pub doc: Option<String>,
    pub ty: Ty,
    pub presence: Presence,
}

/// A closed set of names (a unit-variant enum on the Rust side), with each one's doc.
#[derive(Debug)]
pub(super) struct Enum {
    pub name: String,
    pub doc: Option<String>,
    pub values: Vec<(String, Option<String>)>,
}

#[derive(Debug)]
pub(super) struct Record {
    pub name: String,
    pub doc: Option<String>,
    pub fields: Vec<Field>,
}

#[derive(Debug)]
pub(super) struct Message {
    /// The wire `type`.
    pub kind: String,
    pub doc: Option<String>,
    /// Every field but `type`.
    pub fields: Vec<Field>,
}

/// Everything the TypeScript wire declares, in the order it is written.
#[derive(Debug)]
pub(super) struct Wire {
    pub enums: Vec<Enum>,
    /// Each after the records it uses.
    pub records: Vec<Record>,
    pub client: Vec<Message>,
    pub server: Vec<Message>,
}

/// Read the protocol from [`ClientMsg`] and [`ServerMsg`].
pub(super) fn read() -> Wire {
    let mut reader = Reader::default();
    let client = Schemas::of::<ClientMsg>();
    let mut client_msgs = Vec::new();
    for arm in variants(&client.de) {
        let name = ref_name(&arm["$ref"]);
        let body = client.def(Contract::De, name);
        let fields = reader.fields(&client, Side::Client, body, body, name);
        client_msgs.push(Message {
            kind: wire_type(arm),
            doc: doc(body),
            fields,
        });
    }
    let server = Schemas::of::<ServerMsg>();
    let mut server_msgs = Vec::new();
    for (ser, de) in variants(&server.ser).iter().zip(variants(&server.de)) {
        let kind = wire_type(ser);
        assert_eq!(
            kind,
            wire_type(de),
            "the two contracts list ServerMsg alike"
        );
        let fields = reader.fields(&server, Side::Server, ser, de, &kind);
        server_msgs.push(Message {
            kind,
            doc: doc(ser),
            fields,
        });
    }
    Wire {
        enums: reader.enums,
        records: reader.records,
        client: client_msgs,
        server: server_msgs,
    }
}

#[derive(Clone, Copy)]
enum Contract {
    Ser,
    De,
}

/// One message enum's schema under both contracts.
struct Schemas {
    ser: Value,
    de: Value,
}

impl Schemas {
    fn of<T: JsonSchema>() -> Schemas {
        let root = |settings: SchemaSettings| {
            let schema = settings.into_generator().into_root_schema_for::<T>();
            serde_json::to_value(schema).expect("a schema is JSON")
        };
        Schemas {
            ser: root(SchemaSettings::draft2020_12().for_serialize()),
            de: root(SchemaSettings::draft2020_12().for_deserialize()),
        }
    }

    fn def(&self, contract: Contract, name: &str) -> &Value {
        let root = match contract {
            Contract::Ser => &self.ser,
            Contract::De => &self.de,
        };
        root["$defs"]
            .get(name)
            .unwrap_or_else(|| panic!("no schema for {name}"))
    }
}

#[derive(Default)]
struct Reader {
    enums: Vec<Enum>,
    records: Vec<Record>,
    /// Which side each record was read for.
    sides: HashMap<String, Side>,
}

impl Reader {
    /// The fields of one object, in declaration order: `ser` says what the Rust side
    /// writes, `de` what it accepts (the same schema for a client's message).
    fn fields(
        &mut self,
        schemas: &Schemas,
        side: Side,
        ser: &Value,
        de: &Value,
        owner: &str,
    ) -> Vec<Field> {
        let always_written = names(&ser["required"]);
        let needed = names(&de["required"]);
        let mut fields = Vec::new();
        for (name, prop) in object(&ser["properties"], owner) {
            if name == "type" && prop.get("const").is_some() {
                continue; // the message's own tag
            }
            let (ty, nullable) = self.ty(schemas, side, prop);
            let default = de["properties"][name].get("default");
            let presence = match side {
                Side::Server if !always_written.contains(name) => Presence::Omitted { nullable },
                Side::Server if nullable => Presence::Nullable,
                Side::Server => match default {
                    Some(value) => Presence::Default(value.clone()),
                    None if needed.contains(name) => Presence::Required,
                    None => {
                        panic!("{owner}.{name}: always written, yet neither required nor defaulted")
                    }
                },
                Side::Client if needed.contains(name) => Presence::Required,
                Side::Client if nullable => Presence::MaybeNull,
                Side::Client => Presence::Maybe,
            };
            fields.push(Field {
                name: name.clone(),
                doc: doc(prop),
                ty,
                presence,
            });
        }
        fields
    }

    /// A property's type, and whether it may be null.
    fn ty(&mut self, schemas: &Schemas, side: Side, prop: &Value) -> (Ty, bool) {
        let Some(obj) = prop.as_object() else {
            return (Ty::Json, true); // the schema `true`: anything
        };
        if let Some(target) = obj.get("$ref") {
            return self.named(schemas, side, ref_name(target));
        }
        if let Some(arms) = obj.get("anyOf").and_then(Value::as_array) {
            let (nulls, values): (Vec<&Value>, Vec<&Value>) =
                arms.iter().partition(|a| a["type"] == "null");
            assert_eq!(values.len(), 1, "an anyOf other than `T or null`: {prop}");
            let (ty, nullable) = self.ty(schemas, side, values[0]);
            return (ty, nullable || !nulls.is_empty());
        }
        match obj.get("type") {
            None => (Ty::Json, true),
            Some(Value::String(kind)) => (self.primitive(schemas, side, kind, obj), false),
            Some(Value::Array(kinds)) => {
                let nullable = kinds.iter().any(|k| k == "null");
                let rest: Vec<&str> = kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|k| *k != "null")
                    .collect();
                assert_eq!(rest.len(), 1, "a type list other than `T or null`: {prop}");
                (self.primitive(schemas, side, rest[0], obj), nullable)
            }
            Some(other) => panic!("unexpected type {other}"),
        }
    }

    fn primitive(
        &mut self,
        schemas: &Schemas,
        side: Side,
        kind: &str,
        obj: &Map<String, Value>,
    ) -> Ty {
        match (kind, obj.get("format").and_then(Value::as_str)) {
            ("string", _) => Ty::Str,
            ("boolean", _) => Ty::Bool,
            ("number", _) => Ty::F64,
            ("integer", Some("uint32")) => Ty::U32,
            ("integer", Some("uint64")) => Ty::U64,
            ("array", _) => {
                let (item, nullable) = self.ty(schemas, side, &obj["items"]);
                assert!(!nullable, "an array of nullable items");
                Ty::Array(Box::new(item))
            }
            other => panic!("no TypeScript reader for {other:?}"),
        }
    }

    /// A named schema: an error code, a closed set of names, a record, or an alias of a
    /// primitive (an id).
    fn named(&mut self, schemas: &Schemas, side: Side, name: &str) -> (Ty, bool) {
        if name == "ErrorCode" {
            return (Ty::ErrorCode, false);
        }
        let de = schemas.def(Contract::De, name);
        if let Some(values) = enum_values(de) {
            if !self.enums.iter().any(|e| e.name == name) {
                self.enums.push(Enum {
                    name: name.to_owned(),
                    doc: doc(de),
                    values,
                });
            }
            return (Ty::Enum(name.to_owned()), false);
        }
        if de["type"] != "object" {
            return self.ty(schemas, side, de);
        }
        match self.sides.get(name) {
            Some(seen) if *seen == side => {}
            Some(_) => panic!("{name} is sent both ways: absent fields read differently by side"),
            None => {
                self.sides.insert(name.to_owned(), side);
                let ser = match side {
                    Side::Server => schemas.def(Contract::Ser, name),
                    Side::Client => de,
                };
                let fields = self.fields(schemas, side, ser, de, name);
                self.records.push(Record {
                    name: name.to_owned(),
                    doc: doc(de),
                    fields,
                });
            }
        }
        (Ty::Record(name.to_owned()), false)
    }
}

/// The names and docs of a unit-variant enum's schema (`oneOf` consts, or `enum`).
fn enum_values(schema: &Value) -> Option<Vec<(String, Option<String>)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(|v| Some((v.as_str()?.to_owned(), None)))
            .collect();
    }
    let arms = schema.get("oneOf")?.as_array()?;
    arms.iter()
        .map(|arm| Some((arm.get("const")?.as_str()?.to_owned(), doc(arm))))
        .collect()
}

fn variants(root: &Value) -> &Vec<Value> {
    root["oneOf"].as_array().expect("a message enum is a oneOf")
}

fn wire_type(arm: &Value) -> String {
    arm["properties"]["type"]["const"]
        .as_str()
        .expect("every message has a `type`")
        .to_owned()
}

fn ref_name(target: &Value) -> &str {
    target
        .as_str()
        .and_then(|t| t.strip_prefix("#/$defs/"))
        .unwrap_or_else(|| panic!("unexpected $ref {target}"))
}

fn object<'a>(value: &'a Value, owner: &str) -> &'a Map<String, Value> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("{owner}: no properties"))
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn doc(schema: &Value) -> Option<String> {
    schema
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field<'a>(fields: &'a [Field], name: &str) -> &'a Field {
        fields.iter().find(|f| f.name == name).unwrap()
    }

    fn record<'a>(wire: &'a Wire, name: &str) -> &'a [Field] {
        &wire.records.iter().find(|r| r.name == name).unwrap().fields
    }

    fn message<'a>(msgs: &'a [Message], kind: &str) -> &'a [Field] {
        &msgs.iter().find(|m| m.kind == kind).unwrap().fields
    }

    /// Each serde attribute the protocol uses gives the reader fields.ts documents, by side.
    #[test]
    fn each_field_reads_as_its_serde_attributes_say() {
        let wire = read();
        let report = record(&wire, "Report");
        assert_eq!(field(report, "id").presence, Presence::Required);
        assert_eq!(
            field(report, "kind").presence,
            Presence::Default(json!("report"))
        );
        assert_eq!(field(report, "kind").ty, Ty::Enum("ReportKind".into()));
        assert_eq!(
            field(report, "announced").presence,
            Presence::Default(json!(true))
        );
        let session = record(&wire, "SessionInfo");
        assert_eq!(
            (&field(session, "pid").ty, &field(session, "pid").presence),
            (&Ty::U32, &Presence::Nullable)
        );
        assert_eq!(field(session, "status").ty, Ty::Str);
        let ask = record(&wire, "Ask");
        assert_eq!(field(ask, "id").ty, Ty::U64, "a numeric id is its number");
        assert_eq!(
            field(ask, "to").presence,
            Presence::Omitted { nullable: true }
        );
        let staff = message(&wire.server, "staff");
        assert_eq!(
            field(staff, "assignments").presence,
            Presence::Omitted { nullable: false }
        );
        let error = message(&wire.server, "error");
        assert_eq!(field(error, "code").ty, Ty::ErrorCode);
        assert_eq!(
            (
                &field(error, "details").ty,
                &field(error, "details").presence
            ),
            (&Ty::Json, &Presence::Nullable)
        );
        let pairing = record(&wire, "Pairing");
        assert_eq!(
            field(pairing, "end_reason").ty,
            Ty::Enum("EndReason".into())
        );

        let registration = record(&wire, "Registration");
        assert_eq!(
            field(registration, "session_id").presence,
            Presence::Required
        );
        assert_eq!(field(registration, "pid").presence, Presence::MaybeNull);
        assert_eq!(field(registration, "context").presence, Presence::Maybe);
        let ask_msg = message(&wire.client, "ask");
        assert_eq!(field(ask_msg, "options").presence, Presence::Maybe);
        assert_eq!(field(ask_msg, "key").presence, Presence::MaybeNull);
        assert_eq!(
            field(message(&wire.client, "ack"), "ids").ty,
            Ty::Array(Box::new(Ty::U64))
        );
    }
}
