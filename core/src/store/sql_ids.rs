//! How the protocol's id newtypes go in and out of SQLite: a [`SessionId`] as TEXT, the
//! numeric ids as INTEGER, exactly as the plain values did (the schema does not change);
//! and a stored role back into a [`Role`].

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::protocol::{
    ApprovalId, AskId, AssignmentId, MessageId, PairingId, Role, SessionId, WorkerId,
};

/// A role's stored spelling (anything unknown reads as `lead`).
pub(crate) fn parse_role(role: &str) -> Role {
    match role {
        "manager" => Role::Manager,
        "chief" => Role::Chief,
        "supervisor" => Role::Supervisor,
        _ => Role::Lead,
    }
}

impl ToSql for SessionId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        self.as_str().to_sql()
    }
}

impl FromSql for SessionId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        String::column_result(value).map(SessionId::from)
    }
}

macro_rules! sql_numeric_id {
    ($($name:ident),*) => {
        $(
            impl ToSql for $name {
                fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                    let n = i64::try_from(self.get())
                        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                    Ok(ToSqlOutput::from(n))
                }
            }

            impl FromSql for $name {
                fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                    u64::column_result(value).map($name::from)
                }
            }
        )*
    };
}

sql_numeric_id!(
    ApprovalId,
    AskId,
    AssignmentId,
    MessageId,
    PairingId,
    WorkerId
);
