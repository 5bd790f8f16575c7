//! String interning: each distinct kernel/op name is stored once and referred to by a `NameId`.

use rustc_hash::FxHashMap as HashMap;

/// Index of an interned string. `NameId(0)` is the empty string, used for "absent".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NameId(pub u32);

impl NameId {
    /// The empty string: no name, or an absent value.
    pub const NONE: NameId = NameId(0);
    /// Its position in the table: the index of per-name vectors ([`Interner::per_name`]).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A control character other than tab and line breaks (which pretty-printed JSON keeps).
fn is_hostile_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// `s` with its terminal control characters replaced by U+FFFD, or None when it has none.
pub fn without_controls(s: &str) -> Option<String> {
    s.chars().any(is_hostile_control).then(|| {
        s.chars()
            .map(|c| if is_hostile_control(c) { '\u{fffd}' } else { c })
            .collect()
    })
}

/// Append-only string table.
#[derive(Debug, Clone)]
pub struct Interner {
    ids: HashMap<Box<str>, NameId>,
    strings: Vec<Box<str>>,
}

impl Default for Interner {
    fn default() -> Self {
        let mut t = Interner {
            ids: HashMap::default(),
            strings: Vec::new(),
        };
        t.intern("");
        t
    }
}

impl Interner {
    /// The id of `s`, added when new (stored with its control characters replaced).
    pub fn intern(&mut self, s: &str) -> NameId {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id =
            NameId(u32::try_from(self.strings.len()).expect("more than 4 billion distinct names"));
        // Terminal control characters (an escape sequence in a kernel name) are kept out of
        // every report; lookups still go by the name as written.
        match without_controls(s) {
            Some(clean) => self.strings.push(clean.into()),
            None => self.strings.push(s.into()),
        }
        self.ids.insert(s.into(), id);
        id
    }
    /// The string of `id` as stored (control characters replaced).
    pub fn get(&self, id: NameId) -> &str {
        &self.strings[id.index()]
    }
    /// The id of `s` as written, when it has been interned.
    pub fn lookup(&self, s: &str) -> Option<NameId> {
        self.ids.get(s).copied()
    }
    /// Number of distinct strings, the empty string included.
    pub fn len(&self) -> usize {
        self.strings.len()
    }
    /// Whether it holds only the empty string.
    pub fn is_empty(&self) -> bool {
        self.strings.len() <= 1
    }
    /// One value per distinct name, indexed by [`NameId::index`]: what analyses decide from a
    /// name is decided once per name instead of once per event (millions of events, few names).
    pub fn per_name<T>(&self, f: impl FnMut(&str) -> T) -> Vec<T> {
        self.strings.iter().map(|s| &**s).map(f).collect()
    }
    /// Interns this table's names into `into`, in this table's order; the new id of each name
    /// by its id here. Names go by what was written (a name with control characters stays
    /// apart from its cleaned spelling), as if `into` had interned them itself.
    pub fn renamed_into(&self, into: &mut Interner) -> Vec<NameId> {
        let mut written: Vec<&str> = vec![""; self.strings.len()];
        for (s, id) in &self.ids {
            written[id.index()] = s;
        }
        written.into_iter().map(|s| into.intern(s)).collect()
    }
    /// Every (id, string) pair in id order, the empty string first.
    pub fn iter(&self) -> impl Iterator<Item = (NameId, &str)> {
        self.strings
            .iter()
            .enumerate()
            .map(|(i, s)| (NameId(i as u32), &**s))
    }
}
