//! The Kineto event scanner: reads one event object into a [`RawEvent`] without serde. It walks
//! the object's keys, matches the ones the model reads, takes their values' text as written
//! (numbers are converted later, exactly, by `micros_to_ns` / `to_u64`), and skips the rest
//! while checking them as strictly as serde_json does (string escapes and control characters,
//! number grammar, literals, nesting). Whatever it is not sure of (an escape in a key or in a
//! string the model reads, a repeated key, a value of an unexpected type, deep nesting, the
//! end of the text) makes it decline, and the serde path reads that event: an event gives the
//! same [`RawEvent`], or the same error, whichever path read it. Its entry, which first tries
//! the layouts it has seen, is `seen::scan_event`; JSON's grammar is in `lex`.

use super::checked::Checked;
use super::lex::{after_field, key, literal, number, plain_end, skip_value, ws, Next};
use super::raw::{Raw, RawArgs, RawEvent, Text};
use std::borrow::Cow;

/// Walks the event object at the start of `text` key by key (see `seen::scan_event`), noting in
/// `steps` where each value it read is and what read it.
///
/// The walk is free functions over the bytes and a position they take and return, so the
/// position stays in a register (a cursor behind `&mut self`, shared with closures, was
/// stored and reloaded at every byte).
pub(super) fn walk<'a>(
    text: &'a str,
    ev: &mut RawEvent<'a>,
    values: &mut Checked,
    steps: &mut Vec<Step>,
) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = ws(b, 0);
    if *b.get(i)? != b'{' {
        return None;
    }
    i = ws(b, i + 1);
    if *b.get(i)? == b'}' {
        return Some(i + 1);
    }
    let mut seen = 0u32;
    loop {
        let (key, v) = key(b, i)?;
        let (bit, field) = match key {
            b"ph" => (PH, Field::Ph),
            b"cat" => (CAT, Field::Cat),
            b"name" => (NAME, Field::Name),
            b"pid" => (PID, Field::Pid),
            b"tid" => (TID, Field::Tid),
            b"ts" => (TS, Field::Ts),
            b"dur" => (DUR, Field::Dur),
            b"args" => (ARGS, Field::Args),
            _ => (0, Field::Skip),
        };
        // A repeated key is an error for serde: it says which.
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        i = if bit == ARGS && b.get(v) == Some(&b'{') {
            args(text, v, &mut ev.args, values, steps)?
        } else {
            let e = read_field(text, v, field, ev, values, steps)?;
            steps.push(Step {
                start: v,
                end: e,
                field,
            });
            e
        };
        match after_field(b, i)? {
            Next::Key(k) => i = k,
            Next::End(e) => return Some(e),
        }
    }
}

/// What reads a value of the event: one of its fields, `args` (null or an object), one of
/// `args`' fields (by its index in [`RawArgs`]), or nothing (skipped, in the event or in
/// `args`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Field {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Skip,
    Args,
    Arg(u8),
    SkipArg,
}

/// A value the walk read: where it is in the event, and what read it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Step {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) field: Field,
}

/// Reads the value at `i` into `field` as the walk does (checked as serde checks it) and
/// returns its end.
#[inline(always)]
pub(super) fn read_field<'a>(
    text: &'a str,
    i: usize,
    field: Field,
    ev: &mut RawEvent<'a>,
    values: &mut Checked,
    steps: &mut Vec<Step>,
) -> Option<usize> {
    let b = text.as_bytes();
    match field {
        Field::Ph => text_value(text, i, &mut ev.ph),
        Field::Cat => text_value(text, i, &mut ev.cat),
        Field::Name => text_value(text, i, &mut ev.name),
        Field::Pid => raw_value(text, i, &mut ev.pid),
        Field::Tid => raw_value(text, i, &mut ev.tid),
        Field::Ts => raw_value(text, i, &mut ev.ts),
        Field::Dur => raw_value(text, i, &mut ev.dur),
        Field::Skip => skip_value(b, i, 1),
        Field::Args => args(text, i, &mut ev.args, values, steps),
        Field::Arg(k) => arg_value(text, i, ev.args.slot_at(k)?, values),
        Field::SkipArg => values.skip(b, i),
    }
}

/// A value of `args` the model reads, at `i`: its text as written into `slot` (null: None),
/// checked as serde checks it (by `values` when it checked the same before). Returns its end.
#[inline(always)]
fn arg_value<'a>(
    text: &'a str,
    i: usize,
    slot: &mut Option<Raw<'a>>,
    values: &mut Checked,
) -> Option<usize> {
    let b = text.as_bytes();
    if *b.get(i)? == b'n' {
        return literal(b, i, b"null");
    }
    let e = values.skip(b, i)?;
    *slot = Some(Raw(text.get(i..e)?));
    Some(e)
}

/// Keys of an event object the model reads, by bit.
const PH: u32 = 1;
const CAT: u32 = 2;
const NAME: u32 = 4;
const PID: u32 = 8;
const TID: u32 = 16;
const TS: u32 = 32;
const DUR: u32 = 64;
const ARGS: u32 = 128;

/// `args` at `i`: an object of the keys [`RawArgs`] reads (null: none of them); its values
/// noted in `steps`.
fn args<'a>(
    text: &'a str,
    i: usize,
    args: &mut RawArgs<'a>,
    values: &mut Checked,
    steps: &mut Vec<Step>,
) -> Option<usize> {
    let b = text.as_bytes();
    match *b.get(i)? {
        b'n' => return literal(b, i, b"null"),
        b'{' => {}
        _ => return None,
    }
    let mut i = ws(b, i + 1);
    if *b.get(i)? == b'}' {
        return Some(i + 1);
    }
    let mut seen = 0u64;
    loop {
        let (key, v) = key(b, i)?;
        let (field, e) = match args.slot(key) {
            None => (Field::SkipArg, values.skip(b, v)?),
            Some((bit, slot)) => {
                if seen & bit != 0 {
                    return None;
                }
                seen |= bit;
                let field = Field::Arg(bit.trailing_zeros() as u8);
                (field, arg_value(text, v, slot, values)?)
            }
        };
        steps.push(Step {
            start: v,
            end: e,
            field,
        });
        match after_field(b, e)? {
            Next::Key(k) => i = k,
            Next::End(e) => return Some(e),
        }
    }
}

/// A string the model reads as text at `i` into `slot`: borrowed when it has no escapes (else
/// serde decides), None for null. Returns the value's end.
#[inline(always)]
fn text_value<'a>(text: &'a str, i: usize, slot: &mut Option<Text<'a>>) -> Option<usize> {
    let b = text.as_bytes();
    match *b.get(i)? {
        b'"' => {
            let q = plain_end(b, i + 1)?;
            *slot = Some(Text(Cow::Borrowed(text.get(i + 1..q)?)));
            Some(q + 1)
        }
        b'n' => literal(b, i, b"null"),
        _ => None,
    }
}

/// The event's value at `i`: its text as written into `slot` (null: None), checked as serde
/// checks it. Returns the value's end.
#[inline(always)]
fn raw_value<'a>(text: &'a str, i: usize, slot: &mut Option<Raw<'a>>) -> Option<usize> {
    let b = text.as_bytes();
    let e = match *b.get(i)? {
        // Most are numbers (ids, times): their grammar without the dispatch on the first byte.
        b'0'..=b'9' => number(b, i)?,
        b'n' => return literal(b, i, b"null"),
        _ => skip_value(b, i, 1)?,
    };
    *slot = Some(Raw(text.get(i..e)?));
    Some(e)
}
