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


buckets = st.one_of(u64s, st.just(keys.HELD_BUCKET))
segments = st.builds(keys.segment, projects, buckets, codes)


@given(projects, buckets, codes)
def test_segment_round_trips(project, bucket, code):
    seg = keys.segment(project, bucket, code)
    assert keys.parse_segment(seg) == (project, bucket, code)
    assert keys.state_segment(keys.segment_state(seg)) == seg
    assert keys.segment_state(seg).startswith(keys.segment_states_prefix(project))
    assert keys.segment_prefix(seg).startswith(keys.segments_prefix(project))


@given(segments, terms, ids, versions)
def test_segment_keys_round_trip_and_stay_in_their_segment(seg, term, doc, ver):
    version = keys.dv(doc, ver)
    posting = keys.seg_posting(seg, term, version)
    assert keys.parse_seg_posting(posting, seg) == (term, version)
    assert posting.startswith(keys.seg_posting_prefix(seg, term))
    assert keys.seg_termstat_term(keys.seg_termstat(seg, term), seg) == term
    own = (keys.seg_payload, keys.seg_terms, keys.seg_codes, keys.seg_member)
    for build in own:
        assert keys.seg_version(build(seg, version), seg) == version
    start, end = keys.segment_prefix(seg), keys.prefix_end(keys.segment_prefix(seg))
    every = [posting, keys.seg_termstat(seg, term), keys.seg_corpus(seg)]
    every += [build(seg, version) for build in own]
    assert all(start <= key < end for key in every)  # one range delete takes them all
    assert all(keys.segment_of(key) == seg for key in every)
    assert keys.is_payload(keys.seg_payload(seg, version))
    assert not any(keys.is_payload(k) for k in every if k != keys.seg_payload(seg, version))


@given(st.tuples(projects, buckets, codes), st.tuples(projects, buckets, codes), ids, versions)
def test_segments_order_project_then_bucket_then_class(a, b, doc, ver):
    """A project's segments are contiguous and in bucket order (the due scan stops at
    the first bucket that has not ended); no key of one segment falls inside another's
    range."""
    sa, sb = keys.segment(*a), keys.segment(*b)
    ka, kb = keys.segment_state(sa), keys.segment_state(sb)
    if a[0] == b[0] and a[1] != b[1]:
        assert (ka < kb) == (a[1] < b[1])
    elif a[0] == b[0] and a[2] != b[2]:
        assert (ka < kb) == (a[2] < b[2])
    if a != b:
        inner = keys.seg_payload(sb, keys.dv(doc, ver))
        start = keys.segment_prefix(sa)
        assert not start <= inner < keys.prefix_end(start)


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
        keys.SEGMENT,
        keys.SEGMENT_STATE,
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
        keys.REQUEST_TIME,
    ]
    assert len(set(families)) == len(families)
    assert all(len(f) == 1 for f in families)


@given(segments, st.lists(terms, max_size=5), ids, versions)
def test_postings_of_is_posting_for_each_term(seg, term_list, doc, ver):
    version = keys.dv(doc, ver)
    want = [keys.seg_posting(seg, t, version) for t in term_list]
    assert keys.seg_postings_of(seg, term_list, version) == want
    assert keys.seg_termstats_of(seg, term_list) == [keys.seg_termstat(seg, t) for t in term_list]
    for term in term_list:
        assert keys.term_in_segments([seg, seg], term) == [keys.seg_termstat(seg, term)] * 2


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
    value = keys.join_terms([t.decode() for t in listed])
    assert keys.split_terms(value) == listed
    assert keys.encode_terms([t.decode() for t in listed]) == listed


@given(ids, versions, u64s, ids, u64s)
def test_request_records_and_their_time_index_round_trip_in_time_order(doc, ver, t1, rid, t2):
    locator = f"{doc.decode()}@{ver}"
    assert keys.parse_request_value(keys.request_value(locator, t1)) == (locator, t1)
    assert keys.parse_request_value(locator.encode()) == (locator, None)  # an older record
    assert keys.parse_request_time(keys.request_time(t1, rid)) == (t1, rid)
    assert (keys.request_time(t1, rid) < keys.request_times_until(t2)) == (t1 < t2)


@given(st.integers(0, 2**32 - 1), u64s)
def test_session_reference_values_round_trip_and_older_ones_read_as_since_zero(epoch, since):
    ep = keys.U32.pack(epoch)
    assert keys.parse_session_ref_value(keys.session_ref_value(ep, since)) == (ep, since)
    assert keys.parse_session_ref_value(ep) == (ep, 0)
