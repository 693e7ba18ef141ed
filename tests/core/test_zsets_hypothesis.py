"""Generated sequences of sorted set commands, replayed on real Redis and on minired.

Members and scores come from small pools so that commands collide on the same elements
(updates, ties broken by member, ranges with exclusive bounds landing on existing scores);
sets stay small, so Redis keeps them as listpacks, whose behaviour minired reproduces also
for lexicographic ranges over mixed scores.
"""
from hypothesis import given, settings
from hypothesis import strategies as st

KEYS = ["z1", "z2"]
MEMBERS = ["a", "b", "c", "d", "e", "aa", "", "b\x00"]
SCORES = ["0", "1", "-1", "2.5", "-0", "0.1", "1e20", "inf", "-inf", "3", "1.0000000000000002"]
SCORE_BOUNDS = SCORES + ["(" + score for score in SCORES] + ["+inf", "(-inf", "x"]
LEX_BOUNDS = ["-", "+", "[a", "(a", "[b", "(b\x00", "[aa", "(e", "[", "(", "[zz", "a"]
RANKS = ["0", "1", "-1", "2", "-3", "5", "-100", "100"]

key = st.sampled_from(KEYS)
member = st.sampled_from(MEMBERS)
score = st.sampled_from(SCORES)
score_bound = st.sampled_from(SCORE_BOUNDS)
lex_bound = st.sampled_from(LEX_BOUNDS)
rank = st.sampled_from(RANKS)
count = st.sampled_from(["0", "1", "2", "3", "10", "-1"])
limit = st.one_of(st.just([]), st.tuples(st.sampled_from(["0", "1", "2", "-1", "7"]),
                                         st.sampled_from(["0", "1", "2", "-1", "-5"]))
                  .map(lambda pair: ["LIMIT", *pair]))
withscores = st.sampled_from([[], ["WITHSCORES"]])
zadd_options = st.lists(st.sampled_from(["NX", "XX", "GT", "LT", "CH", "INCR"]), max_size=2,
                        unique=True)


def _zadd(draw_pairs):
    return st.builds(lambda k, options, pairs: ["ZADD", k, *options, *sum(pairs, [])],
                     key, zadd_options,
                     st.lists(st.tuples(score, member).map(list), min_size=1, max_size=draw_pairs))


commands = st.one_of(
    _zadd(4),
    _zadd(1),
    st.builds(lambda k, s, m: ["ZINCRBY", k, s, m], key, score, member),
    st.builds(lambda k, ms: ["ZREM", k, *ms], key, st.lists(member, min_size=1, max_size=3)),
    st.builds(lambda k, a, b, rev, ws: ["ZRANGE", k, a, b, *rev, *ws], key, rank, rank,
              st.sampled_from([[], ["REV"]]), withscores),
    st.builds(lambda k, a, b, rev, lim, ws: ["ZRANGE", k, a, b, "BYSCORE", *rev, *lim, *ws],
              key, score_bound, score_bound, st.sampled_from([[], ["REV"]]), limit, withscores),
    st.builds(lambda k, a, b, rev, lim: ["ZRANGE", k, a, b, "BYLEX", *rev, *lim],
              key, lex_bound, lex_bound, st.sampled_from([[], ["REV"]]), limit),
    st.builds(lambda k, a, b, lim, ws: ["ZRANGEBYSCORE", k, a, b, *ws, *lim],
              key, score_bound, score_bound, limit, withscores),
    st.builds(lambda k, a, b, lim, ws: ["ZREVRANGEBYSCORE", k, a, b, *lim, *ws],
              key, score_bound, score_bound, limit, withscores),
    st.builds(lambda k, a, b, lim: ["ZRANGEBYLEX", k, a, b, *lim], key, lex_bound, lex_bound, limit),
    st.builds(lambda k, a, b, lim: ["ZREVRANGEBYLEX", k, a, b, *lim], key, lex_bound, lex_bound,
              limit),
    st.builds(lambda k, a, b: ["ZCOUNT", k, a, b], key, score_bound, score_bound),
    st.builds(lambda k, a, b: ["ZLEXCOUNT", k, a, b], key, lex_bound, lex_bound),
    st.builds(lambda name, k, m: [name, k, m], st.sampled_from(["ZRANK", "ZREVRANK", "ZSCORE"]),
              key, member),
    st.builds(lambda k, ms: ["ZMSCORE", k, *ms], key, st.lists(member, min_size=1, max_size=3)),
    st.builds(lambda name, k, n: [name, k, *n], st.sampled_from(["ZPOPMIN", "ZPOPMAX"]), key,
              st.sampled_from([[], ["1"], ["2"], ["0"], ["9"]])),
    st.builds(lambda where, n: ["ZMPOP", "2", "z1", "z2", where, "COUNT", n],
              st.sampled_from(["MIN", "MAX"]), st.sampled_from(["1", "2", "5"])),
    st.builds(lambda k, a, b: ["ZREMRANGEBYRANK", k, a, b], key, rank, rank),
    st.builds(lambda k, a, b: ["ZREMRANGEBYSCORE", k, a, b], key, score_bound, score_bound),
    st.builds(lambda k, a, b: ["ZREMRANGEBYLEX", k, a, b], key, lex_bound, lex_bound),
    st.builds(lambda src, a, b: ["ZRANGESTORE", "z2", src, a, b, "BYSCORE"], key, score_bound,
              score_bound),
    st.builds(lambda name, agg: [name, "z1", "2", "z1", "z2", "WEIGHTS", "2", "-1", "AGGREGATE", agg],
              st.sampled_from(["ZUNIONSTORE", "ZINTERSTORE"]), st.sampled_from(["SUM", "MIN", "MAX"])),
    st.builds(lambda name: [name, "2", "z1", "z2", "WITHSCORES"],
              st.sampled_from(["ZUNION", "ZINTER", "ZDIFF"])),
    st.builds(lambda k: ["ZCARD", k], key),
    st.builds(lambda k: ["ZSCAN", k, "0"], key),
)


@settings(max_examples=120)
@given(protocol=st.sampled_from([2, 3]), sequence=st.lists(commands, min_size=1, max_size=25))
def test_sorted_set_command_sequences_match_redis(diff, protocol, sequence):
    diff.both("DEL", *KEYS)
    diff.hello(protocol)
    for command in sequence:
        diff.check(*command)
    for k in KEYS:
        diff.check("ZRANGE", k, "0", "-1", "WITHSCORES")
