//! The jaxpr lexer: splits text into tokens that remember their byte offset.

/// The kind of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier: `abc`, `scatter-add`, `<lambda>`, `_`, `True`, `nan`.
    Word,
    /// A number: `12`, `-1.5`, `1e-05`, `-inf` (the sign is part of it).
    Num,
    /// A quoted string `'...'` or `"..."`.
    Str,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBrack,
    /// `]`
    RBrack,
    /// `,`
    Comma,
    /// `;`
    Semi,
    /// `:`
    Colon,
    /// `.`
    Dot,
    /// `...`
    Ellipsis,
    /// `=`
    Eq,
    /// `<-`
    Arrow,
    /// `+=`
    PlusEq,
    /// `+`
    Plus,
    /// `*`
    Star,
    /// Any other character.
    Other,
    /// End of input.
    Eof,
}

/// A token: its kind and byte span in the source text.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The length of a parenthesised complex literal as Python prints it
/// (`(1+2j)`, `(0.5-0.25j)`, `(nan+infj)`) at the start of `s`, if any.
fn complex_literal_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix('(')?;
    let close = body.find(')')?;
    let inner = &body[..close];
    let ok = inner.len() >= 3
        && inner.ends_with('j')
        && inner.bytes().skip(1).any(|c| c == b'+' || c == b'-')
        && inner
            .bytes()
            .all(|c| c.is_ascii_digit() || b".+-eEinfaj".contains(&c));
    ok.then_some(close + 2)
}

/// Splits `text` into tokens; always ends with one `Eof` token.
pub(crate) fn lex(text: &str) -> Vec<Token> {
    let b = text.as_bytes();
    let n = b.len();
    let mut toks = Vec::with_capacity(n / 3 + 1);
    let mut i = 0;
    let at = |j: usize| -> u8 { b.get(j).copied().unwrap_or(0) };
    while i < n {
        let c = at(i);
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let kind = if is_word_start(c) {
            i += 1;
            loop {
                while is_word_char(at(i)) {
                    i += 1;
                }
                // `scatter-add`: a dash joins two words.
                if at(i) == b'-' && at(i + 1).is_ascii_alphabetic() {
                    i += 1;
                    continue;
                }
                break;
            }
            Tok::Word
        } else if let Some(len) = complex_literal_len(&text[i..]) {
            // `(1+2j)`: a parenthesised complex literal is one number.
            i += len;
            Tok::Num
        } else if c.is_ascii_digit()
            || (c == b'-' && (at(i + 1).is_ascii_digit() || text[i + 1..].starts_with("inf")))
        {
            if c == b'-' {
                i += 1;
            }
            if text.get(i..).is_some_and(|s| s.starts_with("inf")) {
                i += 3;
            } else {
                while at(i).is_ascii_digit() {
                    i += 1;
                }
                if at(i) == b'.' && at(i + 1) != b'.' {
                    i += 1;
                    while at(i).is_ascii_digit() {
                        i += 1;
                    }
                }
                if (at(i) == b'e' || at(i) == b'E')
                    && (at(i + 1).is_ascii_digit()
                        || ((at(i + 1) == b'-' || at(i + 1) == b'+') && at(i + 2).is_ascii_digit()))
                {
                    i += 2;
                    while at(i).is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            // `1j`: an imaginary literal.
            if at(i) == b'j' && !is_word_char(at(i + 1)) {
                i += 1;
            }
            Tok::Num
        } else if c == b'<' && is_word_start(at(i + 1)) {
            // `<lambda>`, `<default>`: a bracketed name is one word.
            let mut j = i + 1;
            while is_word_char(at(j)) {
                j += 1;
            }
            if at(j) == b'>' {
                i = j + 1;
                Tok::Word
            } else {
                i += 1;
                Tok::Other
            }
        } else if c == b'\'' || c == b'"' {
            let mut j = i + 1;
            while j < n && at(j) != c && at(j) != b'\n' {
                j += 1;
            }
            if at(j) == c {
                i = j + 1;
                Tok::Str
            } else {
                i += 1;
                Tok::Other
            }
        } else {
            let (k, len) = match c {
                b'{' => (Tok::LBrace, 1),
                b'}' => (Tok::RBrace, 1),
                b'(' => (Tok::LParen, 1),
                b')' => (Tok::RParen, 1),
                b'[' => (Tok::LBrack, 1),
                b']' => (Tok::RBrack, 1),
                b',' => (Tok::Comma, 1),
                b';' => (Tok::Semi, 1),
                b':' => (Tok::Colon, 1),
                b'.' if at(i + 1) == b'.' && at(i + 2) == b'.' => (Tok::Ellipsis, 3),
                b'.' => (Tok::Dot, 1),
                b'=' => (Tok::Eq, 1),
                b'<' if at(i + 1) == b'-' => (Tok::Arrow, 2),
                b'+' if at(i + 1) == b'=' => (Tok::PlusEq, 2),
                b'+' => (Tok::Plus, 1),
                b'*' => (Tok::Star, 1),
                _ => {
                    // One whole UTF-8 character.
                    let len = text[i..].chars().next().map_or(1, char::len_utf8);
                    (Tok::Other, len)
                }
            };
            i += len;
            k
        };
        toks.push(Token {
            kind,
            start,
            end: i,
        });
    }
    toks.push(Token {
        kind: Tok::Eof,
        start: n,
        end: n,
    });
    toks
}

/// The 1-based line and column of byte offset `pos` in `text`.
pub(crate) fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let before = text.get(..pos).unwrap_or(text);
    let line = before.bytes().filter(|&c| c == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let column = before
        .get(line_start..)
        .map_or(1, |s| s.chars().count() + 1);
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<Tok> {
        lex(s).into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn lexes_literals_and_words() {
        use Tok::*;
        assert_eq!(
            kinds("b:f32[] = scatter-add -1.5:f32[] -inf 1e-05 a[...] <lambda>"),
            vec![
                Word, Colon, Word, LBrack, RBrack, Eq, Word, Num, Colon, Word, LBrack, RBrack, Num,
                Num, Word, LBrack, Ellipsis, RBrack, Word, Eof
            ]
        );
        assert_eq!(
            kinds("a:f32[8]. let"),
            vec![Word, Colon, Word, LBrack, Num, RBrack, Dot, Word, Eof]
        );
    }

    #[test]
    fn line_and_column() {
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("ab", 0), (1, 1));
    }
}
