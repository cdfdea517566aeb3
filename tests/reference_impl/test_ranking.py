"""The lexical ranker: words, the score terms of RNK-1..8 on hand-computed examples, and a property test."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import islice

from hypothesis import given, settings
from hypothesis import strategies as st

from mock_servers import generate_tools, spec_from_dict
from reference_impl import Catalog, LexicalIndex, LexicalRanker, ScoreBreakdown, ToolDoc, words
from reference_impl._ranking import (
    ALIAS,
    ALIASES,
    READ_BONUS,
    READ_ONLY,
    READ_SIGNALS,
    READ_VERBS,
    SYSTEM_SERVER,
    SYSTEM_WORD,
    USER_SERVER,
    USER_WORD,
    WRITE_PENALTY,
    WRITE_VERBS,
    fires,
    names_server,
)

# The catalog of most hand-computed examples, with the words of each tool (name + description):
#   0 gh__list_pull_requests  {list, pull, requests, open}    readOnlyHint true
#   1 gh__merge_pull_request  {merge, pull, request, a}
#   2 linear__list_issues     {list, issues, in, a, project}   readOnlyHint true
#   3 linear__create_issue    {create, issue, an}
#   4 linear__get_logs        {get, logs, fetch, the}
CATALOG = (
    ToolDoc("gh__list_pull_requests", "gh", "list_pull_requests", "List open pull requests", True),
    ToolDoc("gh__merge_pull_request", "gh", "merge_pull_request", "Merge a pull request", False),
    ToolDoc("linear__list_issues", "linear", "list_issues", "List issues in a project", True),
    ToolDoc("linear__create_issue", "linear", "create_issue", "Create an issue", False),
    ToolDoc("linear__get_logs", "linear", "get_logs", "Fetch the logs", False),
)
# System prompt words: {you, help, engineers, triage, issues}; only tool 2 shares one ("issues": +2).
SYSTEM = "You help engineers triage issues."


def _index(tools: Sequence[ToolDoc] = CATALOG, system_prompt: str = SYSTEM) -> LexicalIndex:
    return LexicalIndex(tools, system_prompt)


def _components(
    *,
    user_words: int = 0,
    system_words: int = 0,
    user_server: int = 0,
    system_server: int = 0,
    read_only: int = 0,
    alias: int = 0,
    intent: int = 0,
) -> dict[str, int]:
    return {
        "user_words": user_words,
        "system_words": system_words,
        "user_server": user_server,
        "system_server": system_server,
        "read_only": read_only,
        "alias": alias,
        "intent": intent,
    }


def test_words_are_casefolded_runs_of_letters_and_digits() -> None:
    assert words("list_pull_requests") == ["list", "pull", "requests"]
    assert words("Hello, World! ÄBC-12 x_y") == ["hello", "world", "äbc", "12", "x", "y"]
    assert words("Straße") == ["strasse"]
    assert words("") == []
    assert words("--__..") == []


def test_a_run_of_chinese_characters_is_one_word() -> None:
    assert words("列出最近的工单") == ["列出最近的工单"]
    assert words("查看 PR 合并请求") == ["查看", "pr", "合并请求"]
    assert words("看pr") == ["看pr"]


def test_an_english_message_scores_word_hits_alias_read_only_and_read_intent() -> None:
    # Message words: show, me, the, open, pr, list, for, project. "show"/"list" are read signals;
    # "pr" fires the pull_request alias.
    #   0 list_pull_requests: hits list, open 2x12=24 + alias 12 + readOnly 3 + read verb 8   = 47
    #   1 merge_pull_request: no hit, alias 12, write verb -32                               = -20
    #   2 list_issues: hits list, project 24 + system "issues" 2 + readOnly 3 + read verb 8  = 37
    #   3 create_issue: write verb -32                                                       = -32
    #   4 get_logs: hit "the" 12 + read verb 8                                               = 20
    index = _index()
    query = "Show me the open PR list for the project"
    assert index.scores(query) == {0: 47, 1: -20, 2: 37, 3: -32, 4: 20}
    assert list(index.order(query)) == [0, 2, 4, 1, 3]
    top = index.breakdown(0, query)
    assert top == ScoreBreakdown(user_words=("list", "open"), read_only=True, aliases=("pr",), read_bonus=True)
    assert top.components == _components(user_words=24, read_only=3, alias=12, intent=8)
    assert top.total == 47
    assert index.breakdown(1, query).components == _components(alias=12, intent=-32)
    assert index.breakdown(2, query).components == _components(user_words=24, system_words=2, read_only=3, intent=8)
    assert index.breakdown(2, query).user_words == ("list", "project")
    assert index.breakdown(2, query).system_words == ("issues",)


def test_a_chinese_message_fires_read_intent_and_the_ticket_alias() -> None:
    # "列出最近的工单" is one word, matching no tool word. "列出" and "最近" are read signals
    # (substrings); "工单" fires issue, found in list_issues and create_issue.
    #   0: readOnly 3 + read 8 = 11      1: write -32 = -32
    #   2: alias 12 + system 2 + readOnly 3 + read 8 = 25
    #   3: alias 12 + write -32 = -20    4: read 8 = 8
    index = _index()
    query = "列出最近的工单"
    assert index.scores(query) == {0: 11, 1: -32, 2: 25, 3: -20, 4: 8}
    assert list(index.order(query)) == [2, 0, 4, 3, 1]
    assert index.breakdown(2, query).components == _components(system_words=2, read_only=3, alias=12, intent=8)
    assert index.breakdown(3, query).aliases == ("工单",)
    assert list(index.matches(query)) == [2, 3]


def test_pr_does_not_fire_inside_project_and_summarize_is_not_summary() -> None:
    # Words: summarize, the, project. No alias, no read signal ("summarize" is not "summary").
    #   0: readOnly 3   1: 0   2: "project" 12 + system 2 + readOnly 3 = 17   3: 0   4: "the" 12
    index = _index()
    query = "Summarize the project"
    assert index.scores(query) == {0: 3, 1: 0, 2: 17, 3: 0, 4: 12}
    assert index.breakdown(1, query) == ScoreBreakdown()
    assert str(index.breakdown(1, query)) == "0 (no signal)"
    assert not index.breakdown(1, query).relevant


def test_the_merge_request_alias_fires_pull_request_as_a_substring() -> None:
    # "查看合并请求": one word; "查看" is a read signal, "合并请求" fires pull_request.
    #   0: alias 12 + readOnly 3 + read 8 = 23    1: alias 12 - 32 = -20
    #   2: system 2 + readOnly 3 + read 8 = 13     3: -32    4: 8
    index = _index()
    assert index.scores("查看合并请求") == {0: 23, 1: -20, 2: 13, 3: -32, 4: 8}
    assert index.breakdown(1, "查看合并请求").aliases == ("合并请求",)


def test_two_aliases_that_both_fire_both_count() -> None:
    # "评审这个 PR": "评审" fires review (substring), "pr" fires pull_request (whole word).
    # review_pull_request contains both targets: 2 x 12 = 24. "评审" is not a read signal.
    tools = [
        ToolDoc("gh__review_pull_request", "gh", "review_pull_request", "Approve changes", False),
        ToolDoc("gh__get_logs", "gh", "get_logs", "Fetch the logs", False),
    ]
    index = _index(tools, "")
    assert index.breakdown(0, "评审这个 PR") == ScoreBreakdown(aliases=("pr", "评审"))
    assert index.scores("评审这个 PR") == {0: 24, 1: 0}
    # "日志" fires log: get_logs contains "log".
    assert index.scores("日志") == {0: 0, 1: 12}
    assert index.breakdown(1, "日志").aliases == ("日志",)


def test_naming_the_server_in_the_user_message_adds_16_and_in_the_system_prompt_adds_3() -> None:
    # Message words: find, it, in, linear ("find" is a read signal; "linear" names the server).
    # System prompt "Prefer Linear for planning." names linear too; its words hit no tool.
    #   0: readOnly 3 + read 8 = 11                    1: -32
    #   2: "in" 12 + 16 + 3 + readOnly 3 + read 8 = 42  3: 16 + 3 - 32 = -13
    #   4: 16 + 3 + read 8 = 27
    index = _index(CATALOG, "Prefer Linear for planning.")
    query = "Find it in Linear"
    assert index.scores(query) == {0: 11, 1: -32, 2: 42, 3: -13, 4: 27}
    assert index.breakdown(4, query).components == _components(user_server=16, system_server=3, intent=8)
    # Only the linear tools carry a signal from the query (the server id; "in" for tool 2).
    assert list(index.matches(query)) == [2, 4, 3]
    # Without the query naming it, the system prompt's 3 points are no relevance signal.
    assert list(index.matches("nothing here")) == []
    assert index.scores("nothing here")[4] == 3


def test_a_server_id_counts_only_with_no_letter_or_digit_beside_it() -> None:
    assert names_server("gh", "use gh now")
    assert names_server("gh", "gh-cli")
    assert names_server("gh", "x_gh")
    assert names_server("gh", "(gh)")
    assert not names_server("gh", "ghost")
    assert not names_server("gh", "xgh")
    assert not names_server("gh", "gh2")
    assert not names_server("gh", "工gh")
    assert names_server("my-srv", "ask my-srv please")
    assert names_server("GitHub", "github")


def test_an_ascii_trigger_fires_only_as_a_whole_word_and_others_as_substrings() -> None:
    text = "open the project pr-12 查看合并请求"
    text_words = frozenset(words(text))
    assert fires("pr", text, text_words)
    assert not fires("pr", "open the project", frozenset(words("open the project")))
    assert fires("查看", text, text_words)
    assert fires("合并请求", text, text_words)
    assert not fires("list", "listing", frozenset(["listing"]))


def test_read_only_adds_3_only_for_a_tool_marked_read_only() -> None:
    tools = [ToolDoc("s__a", "s", "a", "", True), ToolDoc("s__b", "s", "b", "", False)]
    assert _index(tools, "").scores("") == {0: 3, 1: 0}


def test_a_name_with_read_and_write_words_gets_both_adjustments_only_under_a_read_signal() -> None:
    # "search" is a hit (12) and a read signal; search_and_delete is read-shaped (+8) and write-shaped (-32).
    tools = [ToolDoc("x__search_and_delete", "x", "search_and_delete", "", False)]
    index = _index(tools, "")
    assert index.breakdown(0, "search").components == _components(user_words=12, intent=8 - 32)
    assert index.scores("search") == {0: -12}
    assert index.scores("delete") == {0: 12}  # no read signal: no adjustment


def test_read_intent_reads_the_name_only_not_the_description() -> None:
    tools = [ToolDoc("x__fetch", "x", "fetch", "list and delete things", False)]
    assert _index(tools, "").breakdown(0, "show").components == _components()


def test_system_prompt_words_count_two_each_and_only_once() -> None:
    # Tool 2's words {list, issues, in, a, project} all occur in the prompt (some twice): 5 x 2 = 10.
    index = _index(CATALOG, "issues issues in a project list LIST")
    assert index.breakdown(2, "").system_words == ("a", "in", "issues", "list", "project")
    assert index.scores("")[2] == 10 + 3


def test_user_words_count_twelve_each_and_only_once() -> None:
    index = _index()
    # "list" twice and "LIST" once in the message: one hit. "list" is also a read signal (+8).
    assert index.breakdown(2, "list list LIST").components == _components(
        user_words=12, system_words=2, read_only=3, intent=8
    )


def test_triggers_in_the_system_prompt_do_not_fire() -> None:
    index = _index(CATALOG, "List PR 工单 日志 recent")
    breakdown = index.breakdown(1, "nothing")
    assert breakdown.aliases == ()
    assert not breakdown.write_penalty


def test_equal_scores_are_ordered_by_qualified_name_in_code_point_order() -> None:
    tools = [
        ToolDoc("gh__alpha", "gh", "alpha", "", False),
        ToolDoc("gh__Zeta", "gh", "Zeta", "", False),
        ToolDoc("a__x", "a", "x", "", False),
        ToolDoc("B__x", "B", "x", "", False),
    ]
    index = _index(tools, "")
    # All score 0; "B" (66) < "a" (97) < "g" (103); "Z" (90) < "a" (97).
    assert [tools[i].qualified_name for i in index.order("")] == ["B__x", "a__x", "gh__Zeta", "gh__alpha"]
    assert [tools[i].qualified_name for i in index.order("x")] == ["B__x", "a__x", "gh__Zeta", "gh__alpha"]


def test_a_score_breakdown_renders_its_total_and_nonzero_components() -> None:
    breakdown = ScoreBreakdown(user_words=("list", "open"), read_only=True, aliases=("pr",), read_bonus=True)
    assert str(breakdown) == "47 (user_words=+24, read_only=+3, alias=+12, intent=+8)"
    assert breakdown.relevant
    assert ScoreBreakdown(user_server=True).relevant
    assert not ScoreBreakdown(system_words=("a",), system_server=True, read_only=True).relevant


def test_the_lexical_ranker_builds_a_lexical_index() -> None:
    ranker = LexicalRanker()
    assert ranker.name == "lexical"
    index = ranker.index(CATALOG, SYSTEM)
    assert isinstance(index, LexicalIndex)
    assert index.scores("Show me the open PR list for the project")[0] == 47


def test_an_empty_catalog_ranks_nothing() -> None:
    index = _index((), "anything")
    assert list(index.order("list")) == []
    assert list(index.matches("list")) == []


# Property: the indexed ranking equals a naive full sort computed straight from the specification.

_ALIASES = (
    ("pr", "pull_request"),
    ("合并请求", "pull_request"),
    ("工单", "issue"),
    ("评审", "review"),
    ("日志", "log"),
)
_READ_SIGNALS = ("查询", "列出", "最近", "查看", "summary", "review", "list", "show", "find", "search", "recent")
_READ = {"list", "search", "get", "read", "find", "view", "download"}
_WRITE = {"create", "update", "delete", "push", "send", "write", "remove", "edit", "merge"}


def _naive_words(text: str) -> set[str]:
    found: set[str] = set()
    current = ""
    for char in text.casefold():
        if char.isalnum():
            current += char
        else:
            if current:
                found.add(current)
            current = ""
    if current:
        found.add(current)
    return found


def _standalone(needle: str, text: str) -> bool:
    start = text.find(needle)
    while start != -1:
        before = text[start - 1] if start > 0 else " "
        end = start + len(needle)
        after = text[end] if end < len(text) else " "
        if not before.isalnum() and not after.isalnum():
            return True
        start = text.find(needle, start + 1)
    return False


def _trigger(trigger: str, text: str) -> bool:
    if trigger.isascii() and trigger.isalpha():
        return _standalone(trigger, text)
    return trigger in text


def _naive(tool: ToolDoc, query: str, system: str) -> tuple[int, bool]:
    q, s = query.casefold(), system.casefold()
    tool_words = _naive_words(tool.name) | _naive_words(tool.description)
    hits = tool_words & _naive_words(q)
    score = 12 * len(hits) + 2 * len(tool_words & _naive_words(s))
    named = _standalone(tool.server_id.casefold(), q)
    score += 16 * named + 3 * _standalone(tool.server_id.casefold(), s) + 3 * tool.read_only
    fired = [target for trigger, target in _ALIASES if _trigger(trigger, q) and target in tool.name.casefold()]
    score += 12 * len(fired)
    if any(_trigger(signal, q) for signal in _READ_SIGNALS):
        name_words = _naive_words(tool.name)
        score += 8 * bool(name_words & _READ) - 32 * bool(name_words & _WRITE)
    return score, bool(hits or fired or named)


_VOCABULARY = [
    "list", "get", "create", "delete", "merge", "search", "find", "show", "recent", "review", "summary",
    "pull", "request", "requests", "issue", "issues", "log", "logs", "project", "pr", "PR", "Zeta", "data",
    "工单", "日志", "评审", "合并请求", "列出", "最近", "查看", "查询", "列出最近的工单", "gh", "linear", "x-y", "B",
]  # fmt: skip
_NAME_PARTS = ["list", "get", "create", "delete", "pull_request", "issue", "issues", "review", "log", "search"]
_NAME_PARTS += ["Zeta", "merge", "find", "data", "x", "工单"]
_SERVERS = ["a", "gh", "linear", "x-y", "B"]

_text = st.lists(
    st.tuples(st.sampled_from(_VOCABULARY), st.sampled_from([" ", ", ", "_", "-", "", "。"])), max_size=6
).map(lambda parts: "".join(word + sep for word, sep in parts))
_tool = st.builds(
    lambda server, parts, description, read_only: ToolDoc(
        f"{server}__{'_'.join(parts)}", server, "_".join(parts), description, read_only
    ),
    st.sampled_from(_SERVERS),
    st.lists(st.sampled_from(_NAME_PARTS), min_size=1, max_size=3),
    _text,
    st.booleans(),
)
_catalog = st.lists(_tool, max_size=12, unique_by=lambda t: t.qualified_name)


@settings(max_examples=150, deadline=None, database=None)
@given(tools=_catalog, system=_text, queries=st.lists(_text, min_size=1, max_size=3))
def test_the_indexed_ranking_equals_a_naive_full_sort_by_score_then_name(
    tools: list[ToolDoc], system: str, queries: list[str]
) -> None:
    index = LexicalIndex(tools, system)
    for query in queries:
        naive = {i: _naive(tool, query, system) for i, tool in enumerate(tools)}
        expected = sorted(range(len(tools)), key=lambda i: (-naive[i][0], tools[i].qualified_name))
        assert index.scores(query) == {i: score for i, (score, _) in naive.items()}
        assert list(index.order(query)) == expected
        assert list(index.matches(query)) == [i for i in expected if naive[i][1]]
        for i in range(len(tools)):
            breakdown = index.breakdown(i, query)
            assert breakdown.total == naive[i][0]
            assert breakdown.relevant == naive[i][1]


# Larger, skewed catalogs: few distinct descriptions, so many tools share every word of the
# query and tie on everything but their static score and name; queries name servers too.

_DESCRIPTIONS = st.sampled_from(
    ["List the open pull requests", "Get the logs of a run", "Create an issue in the project", "the", "", "查看 日志"]
)
_skewed_tool = st.builds(
    lambda server, parts, description, read_only, k: ToolDoc(
        f"{server}__{'_'.join(parts)}_{k}", server, f"{'_'.join(parts)}_{k}", description, read_only
    ),
    st.sampled_from(_SERVERS),
    st.lists(st.sampled_from(_NAME_PARTS), min_size=1, max_size=2),
    _DESCRIPTIONS,
    st.booleans(),
    st.integers(0, 3),
)
_skewed_catalog = st.lists(_skewed_tool, min_size=10, max_size=60, unique_by=lambda t: t.qualified_name)
_skewed_query = st.lists(
    st.tuples(st.sampled_from([*_VOCABULARY, "the", "open", "a", "x-y", "linear", "gh"]), st.sampled_from([" ", ", "])),
    max_size=8,
).map(lambda parts: "".join(word + sep for word, sep in parts))


@settings(max_examples=100, deadline=None, database=None)
@given(tools=_skewed_catalog, system=_skewed_query, queries=st.lists(_skewed_query, min_size=1, max_size=3))
def test_the_ranking_of_a_skewed_catalog_equals_a_naive_full_sort(
    tools: list[ToolDoc], system: str, queries: list[str]
) -> None:
    index = LexicalIndex(tools, system)
    for query in queries:
        naive = {i: _naive(tool, query, system) for i, tool in enumerate(tools)}
        expected = sorted(range(len(tools)), key=lambda i: (-naive[i][0], tools[i].qualified_name))
        assert list(index.order(query)) == expected
        assert list(index.matches(query)) == [i for i in expected if naive[i][1]]
        # A consumer that stops early gets the same prefix.
        assert list(islice(index.order(query), 5)) == expected[:5]


def test_interleaved_rankings_of_different_queries_do_not_interfere() -> None:
    index = _index()
    first, second = index.order("Show me the open PR list"), index.matches("linear issues")
    assert next(first) == 0
    assert list(second) == [2, 3, 4]
    assert list(first) == [2, 4, 1, 3]


# The index against the algorithm it replaced, on a generated catalog with realistic word skew.


class _TouchedSort:
    """The previous algorithm: enumerate every tool a query touches, score it, sort them all."""

    def __init__(self, tools: Sequence[ToolDoc], system_prompt: str) -> None:
        self.tools = tools
        self.postings: dict[str, list[int]] = {}
        for i, tool in enumerate(tools):
            for word in set(words(tool.name)) | set(words(tool.description)):
                self.postings.setdefault(word, []).append(i)
        system = system_prompt.casefold()
        system_hits = Counter(i for word in set(words(system)) for i in self.postings.get(word, ()))
        servers = {tool.server_id for tool in tools}
        system_servers = {s for s in servers if names_server(s, system)}
        self.static = [
            SYSTEM_WORD * system_hits[i] + SYSTEM_SERVER * (t.server_id in system_servers) + READ_ONLY * t.read_only
            for i, t in enumerate(tools)
        ]
        self.intent = []
        for tool in tools:
            name_words = set(words(tool.name))
            self.intent.append(
                READ_BONUS * bool(name_words & READ_VERBS) + WRITE_PENALTY * bool(name_words & WRITE_VERBS)
            )

    def rank(self, query: str) -> tuple[list[int], list[int]]:
        text = query.casefold()
        query_words = frozenset(words(text))
        hits = Counter(i for word in query_words for i in self.postings.get(word, ()))
        aliases = Counter(
            i
            for trigger, target in ALIASES
            if fires(trigger, text, query_words)
            for i, tool in enumerate(self.tools)
            if target in tool.name.casefold()
        )
        named = {i for i, tool in enumerate(self.tools) if names_server(tool.server_id, text)}
        read = any(fires(signal, text, query_words) for signal in READ_SIGNALS)
        score = [
            self.static[i]
            + USER_WORD * hits[i]
            + ALIAS * aliases[i]
            + USER_SERVER * (i in named)
            + (self.intent[i] if read else 0)
            for i in range(len(self.tools))
        ]
        ranked = sorted(range(len(self.tools)), key=lambda i: (-score[i], self.tools[i].qualified_name))
        return ranked, [i for i in ranked if hits[i] or aliases[i] or i in named]


_GENERATED_QUERIES = [
    "",
    "the",
    "list list LIST",
    "show me the open pull requests and recent build failures",
    "Show me the open PR list for the project",
    "pr",
    "create an issue for the failing build",
    "delete the stale branches and merge the release pull request",
    "search issues labelled bug in tracker-0001",
    "find the recent deployments of cloud-0005",
    "send a message to the incidents channel on chat-0004",
    "what tables are in data-0003 and git-0000?",
    "summary of the dashboards in mon-0009 and mon-0019",
    "review the docs page about onboarding",
    "summarize the project",
    "download the logs of the last workflow run",
    "get the calendar events for friday",
    "update the milestone of the project",
    "list the customers in the crm with open deals",
    "open the browser and take a screenshot of the dashboard",
    "列出最近的工单",
    "查看合并请求",
    "评审这个 PR",
    "日志",
    "查询 git-0010 的日志",
    "最近 的 工单 和 合并请求",
    "帮我创建一个日历事件",
    "Straße ÄBC-12 x_y",
    "git-0000 git-0010 tracker-0011 chat-0014",
    "use wiki-0006 to read the page, then edit it",
    # A long message that touches most domains, as a user's first message often does.
    "Good morning! Before the release on Thursday I need a few things: the open pull requests on the main "
    "branch that change the payment retries, the bug issues opened since last Monday and whether any of them "
    "mention database timeouts, last night's logs of the failing deploy workflow next to the latency dashboard "
    "of the warehouse, a short note for the incidents channel in chat, a calendar meeting on Friday to read the "
    "release notes together, and the project milestone moved to the new date in the tracker and in the docs.",
]

_DOMAIN_PREFIXES = (
    ("code_hosting", "git"),
    ("issue_tracker", "tracker"),
    ("browser", "web"),
    ("data_platform", "data"),
    ("chat", "chat"),
    ("cloud", "cloud"),
    ("docs", "wiki"),
    ("calendar", "cal"),
    ("crm", "crm"),
    ("monitoring", "mon"),
)


def _generated_catalog(servers: int) -> list[ToolDoc]:
    """100 mock-fleet tools on each of ``servers`` servers (``git-0000``, ``tracker-0001``, …), domains in turn."""
    domains = [_DOMAIN_PREFIXES[k % len(_DOMAIN_PREFIXES)] for k in range(servers)]
    spec = spec_from_dict(
        {
            "seed": 100,
            "servers": [{"id": f"{p}-{k:04d}", "domain": d, "tool_count": 100} for k, (d, p) in enumerate(domains)],
        }
    )
    catalog = Catalog.from_listings({server.id: generate_tools(server) for server in spec.servers})
    return [ToolDoc(e.qualified_name, e.server_id, e.name, e.description, e.read_only) for e in catalog.entries]


def test_the_index_ranks_a_generated_catalog_like_the_algorithm_it_replaced() -> None:
    tools = _generated_catalog(20)
    system = (
        "You are an engineering assistant with code hosting, issues, a warehouse, chat, cloud and calendars. "
        "Read before you write, and ask before deleting anything. Prefer git-0010 and chat-0004 for anything urgent."
    )
    index, previous = LexicalIndex(tools, system), _TouchedSort(tools, system)
    for query in _GENERATED_QUERIES:
        order, matches = previous.rank(query)
        assert list(index.order(query)) == order, query
        assert list(index.matches(query)) == matches, query
        assert list(islice(index.order(query), 100)) == order[:100], query
        scores = index.scores(query)
        for i in order[:20] + order[-5:]:
            assert index.breakdown(i, query).total == scores[i], query
