//! A representative value of a WIT type, standing in for a referenced output while a plan
//! is checked: if the stand-in converts to the consuming parameter's type, the reference
//! has a compatible shape.

use toolhost_runtime::convert::Val;

use toolhost_runtime::types::WitType;

/// The simplest value of `ty`: zero, empty, `none`, the first case.
pub fn sample(ty: &WitType) -> Val {
    match ty {
        WitType::Bool => Val::Bool(false),
        WitType::S8 => Val::S8(0),
        WitType::U8 => Val::U8(0),
        WitType::S16 => Val::S16(0),
        WitType::U16 => Val::U16(0),
        WitType::S32 => Val::S32(0),
        WitType::U32 => Val::U32(0),
        WitType::S64 => Val::S64(0),
        WitType::U64 => Val::U64(0),
        WitType::F32 => Val::Float32(0.0),
        WitType::F64 => Val::Float64(0.0),
        WitType::Char => Val::Char('a'),
        WitType::String => Val::String(String::new()),
        WitType::List(_) => Val::List(Vec::new()),
        WitType::FixedList(t, n) => Val::FixedLengthList((0..*n).map(|_| sample(t)).collect()),
        WitType::Map(_, _) => Val::Map(Vec::new()),
        WitType::Record(fields) => {
            Val::Record(fields.iter().map(|(n, t)| (n.clone(), sample(t))).collect())
        }
        WitType::Tuple(ts) => Val::Tuple(ts.iter().map(sample).collect()),
        WitType::Variant(cases) => {
            let (name, payload) = cases.first().expect("a variant has a case");
            Val::Variant(name.clone(), payload.as_ref().map(|t| Box::new(sample(t))))
        }
        WitType::Enum(names) => Val::Enum(names.first().expect("an enum has a case").clone()),
        WitType::Option(_) => Val::Option(None),
        WitType::Result { ok, .. } => Val::Result(Ok(ok.as_ref().map(|t| Box::new(sample(t))))),
        WitType::Flags(_) => Val::Flags(Vec::new()),
    }
}
