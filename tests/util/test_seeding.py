import hashlib

import numpy as np

from calipers._util.seeding import derived_rng, derived_seed


def test_derived_seed_is_the_first_32_bits_of_the_sha256_of_the_nul_joined_parts() -> None:
    digest = hashlib.sha256(b"gsm8k\x00acc").digest()
    assert derived_seed("gsm8k", "acc") == int.from_bytes(digest[:4], "big")


def test_derived_rng_reproduces_the_stream_stored_runs_were_summarized_with() -> None:
    # the formula every bootstrap used before the helper existed
    old = np.random.default_rng([7, int(hashlib.sha256(b"t\x00m").hexdigest()[:8], 16)])
    assert derived_rng(7, "t", "m").random(5).tolist() == old.random(5).tolist()


def test_streams_with_other_names_or_seeds_differ() -> None:
    a = derived_rng(7, "t", "m").random(3).tolist()
    assert a != derived_rng(7, "t", "n").random(3).tolist()
    assert a != derived_rng(8, "t", "m").random(3).tolist()
    # the parts are joined with a separator: ("ab", "c") is not ("a", "bc")
    assert derived_seed("ab", "c") != derived_seed("a", "bc")
