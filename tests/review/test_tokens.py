"""Invite tokens: only an argon2 hash is stored, the key finds the person, a changed token fails."""

from __future__ import annotations

from calipers.review import check_token, issue_token, token_key


def test_a_token_checks_against_its_hash_and_nothing_else() -> None:
    t = issue_token()
    assert t.hash.startswith("$argon2id$")  # argon2id, the library's default
    assert t.text not in t.hash and t.text not in repr(t)
    assert token_key(t.text) == t.key and t.text.startswith(t.key + ".")
    assert check_token(t.text, t.hash)
    other = issue_token()
    assert not check_token(other.text, t.hash)
    assert not check_token(t.text[:-1] + ("A" if t.text[-1] != "A" else "B"), t.hash)
    assert not check_token(t.text, "not-a-hash")
    assert other.key != t.key and other.text != t.text


def test_a_malformed_token_has_no_key() -> None:
    for bad in ("", "nodot", "short.secret", "x" * 12 + ".", "../etc/passwd." + "a" * 40):
        assert token_key(bad) is None
