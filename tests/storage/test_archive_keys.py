"""Property tests of the archive key layout: every builder round-trips through its
parser, and byte order is the order the scans rely on."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.storage.archive import keys

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}", fullmatch=True).map(str.encode)
projects = st.text(
    st.characters(blacklist_characters="\x00/@", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=200,
).map(str.encode)
terms = st.from_regex(r"\w{1,64}", fullmatch=True).map(lambda t: t.lower().encode())
versions = st.integers(1, 2**32 - 1)
u64s = st.integers(0, 2**64 - 1)
codes = st.sampled_from(sorted(keys.CODE_CLASS))


@given(ids, versions)
def test_dv_round_trips(doc, ver):
    assert keys.split_dv(keys.dv(doc, ver)) == (doc.decode(), ver)


@given(projects, terms, ids, versions)
def test_posting_round_trips(project, term, doc, ver):
    key = keys.posting(project, term, keys.dv(doc, ver))
    assert keys.parse_posting(key) == (project, term, keys.dv(doc, ver))
    assert key.startswith(keys.posting_prefix(project, term))


@given(u64s, codes, ids, versions)
def test_expiry_round_trips(bucket, code, doc, ver):
    key = keys.expiry(bucket, code, keys.dv(doc, ver))
    assert keys.parse_expiry(key) == (bucket, code, keys.dv(doc, ver))
    assert keys.expiry_bucket(bucket) <= key < keys.prefix_end(keys.expiry_bucket(bucket))


@given(u64s, ids)
def test_owner_access_round_trip(n, ident):
    assert keys.parse_owner_exp(keys.owner_exp(n, ident)) == (n, ident)
    assert keys.parse_access(keys.access(n, ident)) == (n, ident)


@given(u64s, ids, versions)
def test_retrieval_lease_round_trips(n, doc, ver):
    assert keys.parse_rlease_exp(keys.rlease_exp(n, keys.dv(doc, ver))) == (n, keys.dv(doc, ver))


@given(ids, ids, versions)
def test_lease_references_round_trip(client, doc, ver):
    version = keys.dv(doc, ver)
    assert keys.fwd_version(keys.fwd(client, version), client) == version
    assert keys.rev_client(keys.rev(version, client), version) == client
    assert keys.fwd(client, version).startswith(keys.fwd_prefix(client))
    assert keys.rev(version, client).startswith(keys.rev_prefix(version))


@given(ids, versions)
def test_one_family_per_key(doc, ver):
    version = keys.dv(doc, ver)
    assert keys.purge_version(keys.purge(version)) == version
    assert keys.doc_of(keys.doc(doc)) == doc
    assert keys.doc_of(keys.pin(doc)) == doc
    assert keys.is_payload(keys.payload(version))
    assert not keys.is_payload(keys.purge(version))


@given(st.tuples(u64s, codes, ids, versions), st.tuples(u64s, codes, ids, versions))
def test_expiry_orders_bucket_then_class_then_version(a, b):
    """A due scan stops at the first future bucket: byte order is time order first."""
    ka = keys.expiry(a[0], a[1], keys.dv(a[2], a[3]))
    kb = keys.expiry(b[0], b[1], keys.dv(b[2], b[3]))
    if a[0] != b[0]:
        assert (ka < kb) == (a[0] < b[0])
    elif a[1] != b[1]:
        assert (ka < kb) == (a[1] < b[1])
    elif a[2] == b[2] and a[3] != b[3]:
        assert (ka < kb) == (a[3] < b[3])


@given(ids, versions, versions, ids, versions)
def test_versions_of_a_document_are_contiguous_and_in_order(doc, v1, v2, other, v3):
    assert (keys.dv(doc, v1) < keys.dv(doc, v2)) == (v1 < v2)
    if other != doc:
        # another document's version never falls between two versions of this one
        lo, hi = sorted((keys.dv(doc, v1), keys.dv(doc, v2)))
        assert not lo < keys.dv(other, v3) < hi


@given(u64s, u64s, ids, ids)
def test_time_indexes_order_by_time(t1, t2, c1, c2):
    if t1 != t2:
        assert (keys.owner_exp(t1, c1) < keys.owner_exp(t2, c2)) == (t1 < t2)
        assert (keys.access(t1, c1) < keys.access(t2, c2)) == (t1 < t2)
        assert (keys.owner_exp(t1, c1) < keys.owner_exp_until(t2)) == (t1 < t2)


@given(st.binary(min_size=1, max_size=20), st.binary(max_size=10))
def test_prefix_end_bounds_every_extension(prefix, rest):
    end = keys.prefix_end(prefix)
    assert end is None or prefix + rest < end


def test_families_are_distinct():
    families = [
        keys.META,
        keys.DOC,
        keys.PAYLOAD,
        keys.POSTING,
        keys.TERMSTAT,
        keys.CORPUS,
        keys.EXPIRY,
        keys.PURGE,
        keys.PIN,
        keys.OWNER,
        keys.OWNER_EXP,
        keys.FWD,
        keys.REV,
        keys.RLEASE,
        keys.RLEASE_EXP,
        keys.ACCESS,
        keys.REQUEST,
        keys.CURSOR,
        keys.SESSION_REF,
        keys.SESSION_FWD,
        keys.DERIVED,
    ]
    assert len(set(families)) == len(families)
    assert all(len(f) == 1 for f in families)


@given(projects, st.lists(terms, max_size=5), ids, versions)
def test_postings_of_is_posting_for_each_term(project, term_list, doc, ver):
    version = keys.dv(doc, ver)
    want = [keys.posting(project, t, version) for t in term_list]
    assert keys.postings_of(project, term_list, version) == want


sessions = st.text(
    st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), min_size=1
).map(str.encode)


@given(projects, sessions, ids)
def test_session_references_round_trip(project, session, client):
    ref = keys.session_ref(project, session, client)
    assert ref.startswith(keys.session_ref_prefix(project, session))
    assert keys.session_ref_client(ref, project, session) == client
    fwd = keys.session_fwd(client, project, session)
    assert fwd.startswith(keys.session_fwd_prefix(client))
    assert keys.parse_session_fwd(fwd, client) == (project, session)


@given(ids, ids)
def test_derived_references_round_trip(source, derived):
    key = keys.derived(source, derived)
    assert key.startswith(keys.derived_prefix(source))
    assert keys.derived_doc_of(key, source) == derived


@given(projects, projects, terms, u64s)
def test_the_statistics_journal_never_meets_a_statistic(project, other, term, seq):
    """Journal records sit apart from every project's statistics (a project never
    starts with NUL), a project's records under its own prefix, and the journal's
    record number after every statistic (so a file of folded statistics never ends
    on a term)."""
    record = keys.df_journal(project, seq)
    stat = keys.termstat(other, term)
    assert keys.df_journal_project(record) == project
    assert record.startswith(keys.df_journal_prefix(project)) and record < stat
    assert not stat.startswith(keys.df_journal_prefix())
    assert stat < keys.DF_JOURNAL_SEQ < keys.prefix_end(keys.TERMSTAT)
    if other != project:
        assert not keys.df_journal(other, seq).startswith(keys.df_journal_prefix(project))
    assert any(begin <= record < end for begin, end in keys.content_ranges(project))


@given(ids, versions, st.lists(terms, max_size=40))
def test_term_list_round_trips(doc, ver, listed):
    version = keys.dv(doc, ver)
    assert keys.term_list_version(keys.term_list(version)) == version
    value = keys.join_terms([t.decode() for t in listed])
    assert keys.split_terms(value) == listed
    assert keys.postings_of(b"p", keys.split_terms(value), version) == [
        keys.posting(b"p", t, version) for t in listed
    ]
