"""The input of the lexical vectors: fixed catalogs, system prompts and messages.

Each case says in its description what it pins, and lists the clauses it is about. The
expected scores and orders are not written here: ``python -m tests.conformance.vectors``
computes them with the reference ranker, and ``test_lexical.py`` recomputes them (and a
hand-worked subset) from the specification's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["GROUPS", "Case", "Group", "Server", "Tool"]

_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    # The JSON value of readOnlyHint; _ABSENT for a tool without annotations.
    read_only_hint: Any = _ABSENT

    def annotations(self) -> dict[str, Any] | None:
        return None if self.read_only_hint is _ABSENT else {"readOnlyHint": self.read_only_hint}


@dataclass(frozen=True, slots=True)
class Server:
    id: str
    tools: tuple[Tool, ...]


@dataclass(frozen=True, slots=True)
class Case:
    description: str
    clauses: tuple[str, ...]
    user_message: str
    system_prompt: str = ""
    # The sentences that alone decide what the case's probes observe, and those (isolated by
    # cases of their own) it relies on besides; an end-to-end case isolates nothing.
    isolates: tuple[str, ...] = ()
    assumes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Group:
    id: str
    description: str
    servers: tuple[Server, ...]
    cases: tuple[Case, ...]


def _server(server_id: str, *tools: tuple[str, str] | tuple[str, str, Any]) -> Server:
    return Server(server_id, tuple(Tool(*tool) for tool in tools))


# Four servers whose tool names all suit every provider, so that a driver can serve them.
# `Linear` sorts before `github` by code point but after it case-insensitively; `logs-eu`
# sorts before `logs` as a qualified name (`-` < `_`) but after it as a server id; the
# `logs` server sends read-only hints that are not the JSON value true ("true" and 1).
WORKBENCH = (
    _server(
        "github",
        ("list_pull_requests", "List pull requests of one repository, newest first.", True),
        ("get_pull_request", "Get one pull request with its diff and review state.", True),
        ("create_pull_request", "Open pull request from branch.", False),
        ("merge_pull_request", "Merge pull request by squash or rebase.", False),
        ("list_issues", "List issues of one repository.", True),
        ("create_issue", "Create issue in repository.", False),
        ("search_code", "Search code across all repositories.", True),
        ("get_file_contents", "Get contents of one ﬁle at branch or tag.", True),
        ("push_files", "Push ﬁles to branch in single commit.", False),
        ("list_reviews", "列出拉取请求的评审意见。Reviews left on pull request.", True),
        ("get_changelog", "Get the changelog of a release.", True),
        ("get_or_create_label", "Get label, creating it when missing."),
        ("download_release_asset", "Download release asset by name."),
    ),
    _server(
        "Linear",
        ("list_issues", "List issues (工单) of one team.", True),
        ("search_issues", "Search issues by title and text.", True),
        ("get_issue", "Get issue with its comments.", True),
        ("create_issue", "Create issue for team."),
        ("update_issue", "Update state, assignee or priority of issue.", False),
        ("reissue_invite", "Send new invitation to teammate.", False),
        ("list_projects", "List projects of team, with progress.", True),
        ("add_comment", "Add comment to issue."),
        ("ListCycles", "List the cycles (sprints) of a team.", True),
        ("preview_roadmap", "Preview roadmap of quarter.", True),
        ("download_attachment", "Download attachment by id."),
    ),
    _server(
        "logs",
        ("query_logs", "查询日志：按服务和时间段检索。Query logs by service and time range.", "true"),
        ("tail_log", "Tail the live log of a service.", 1),
        ("list_services", "List services that ship logs.", True),
        ("download_archive", "Download log archive of one day as .tar.gz.", True),
        ("delete_logs", "Delete logs older than N days.", False),
        ("get_error_summary", "Summary of top ٣ errors per service.", True),
        ("show_metrics", "Show CPU and memory metrics.", True),
        ("find_trace", "Find trace by its İD.", True),
    ),
    _server(
        "logs-eu",
        ("query_logs", "查询日志：按服务和时间段检索。Query logs by service and time range."),
        ("tail_log", "Tail the live log of a service.", False),
        ("list_services", "List services that ship logs.", True),
        ("find_street", "Find street (Straße) in EU address index.", True),
        ("read_audit_report", "Read ΕΛΕΓΧΟΣ audit report.", True),
        ("send_alert", "Send alert to on-call channel, with ３ retries.", False),
    ),
)

NO_PROMPT = ""
RELEASE = "You are a release engineer for the github repositories of the platform team. Be brief."
OPS_ZH = "你是运维助手，负责日志、工单和评审。回答要简短。"
TRACKER = "Always list your sources. Our tracker is Linear; logs live in logs-eu."
CAREFUL = "Prefer read-only tools. Never delete or push without asking. Summary first."


def _cases(prompt: str, *rows: tuple[str, tuple[str, ...], str]) -> list[Case]:
    return [Case(description, clauses, message, prompt) for message, clauses, description in rows]


WORKBENCH_CASES = (
    # Words and tokenization.
    *_cases(
        NO_PROMPT,
        ("show me open pull requests", ("RNK-1", "RNK-2", "RNK-6"), "two word hits and a read signal"),
        ("list_pull_requests", ("RNK-1",), "underscores separate the words of a message too"),
        ("List-Pull-Requests!!!", ("RNK-1",), "punctuation separates words; case does not matter"),
        ("PULL REQUESTS", ("RNK-1",), "casefolding of ASCII"),
        ("ListPullRequests", ("RNK-1", "DSC-10"), "camel case is one word: no hit, no read signal"),
        ("pull request 42", ("RNK-1", "RNK-2"), "'request' is not 'requests': no stemming"),
        ("get the file contents from main", ("RNK-1", "RNK-2"), "the ligature ﬁ in a description folds to fi"),
        ("ﬁles to push", ("RNK-1", "RNK-2"), "the ligature ﬁ in the message folds to fi"),
        ("STRASSE", ("RNK-1",), "ß in a description folds to ss"),
        ("find the straße", ("RNK-1", "RNK-6"), "ß in the message folds to ss; find is a read signal"),
        ("strase", ("RNK-1", "DSC-10"), "no fuzzy matching"),
        ("ελεγχος", ("RNK-1",), "final sigma folds to σ, like Σ"),
        ("Ελεγχοσ report", ("RNK-1", "RNK-2"), "Greek capitals and a medial sigma at the end"),
        ("top ٣ errors", ("RNK-1", "RNK-2"), "an Arabic-Indic digit is a word of its own"),
        ("top 3 errors", ("RNK-1", "RNK-2"), "3 is not ٣: digits are not mapped"),
        ("３ retries", ("RNK-1", "RNK-2"), "a fullwidth digit is a word of its own"),
        ("3 retries", ("RNK-1", "RNK-2"), "3 is not ３"),
        ("trace İD", ("RNK-1",), "İ folds to i and a combining dot, which separates words"),
        ("trace ID", ("RNK-1",), "ID is one word, id, which no tool has"),
        ("I need the trace", ("RNK-1", "RNK-2"), "the word i from İD is hit by the pronoun I"),
        ("列出拉取请求的评审意见", ("RNK-1", "RNK-5", "RNK-6"), "a run of Chinese characters is one word"),
        ("拉取请求", ("RNK-1", "DSC-10"), "part of a Chinese run is not a word of it"),
        ("the the the", ("RNK-1", "RNK-2"), "a repeated message word counts once"),
        ("comments, issues & projects", ("RNK-1", "RNK-2"), "several hits on several tools"),
        ("a", ("RNK-1", "RNK-2"), "a one-letter word"),
    ),
    # Server ids.
    *_cases(
        NO_PROMPT,
        ("github issues", ("RNK-3",), "a named server's tools gain 16"),
        ("LINEAR issues", ("RNK-3", "RNK-8"), "the casefolded id names Linear"),
        ("linear-time search", ("RNK-3", "RNK-7"), "a hyphen is not a letter or digit: Linear is named"),
        ("nonlinear search", ("RNK-3", "RNK-7"), "inside a word the id names nothing"),
        ("github2 issues", ("RNK-3", "RNK-7"), "a digit after the id: not named"),
        ("tail logs-eu", ("RNK-3", "RNK-8"), "naming logs-eu also names logs, followed by a hyphen"),
        ("tail logs_eu", ("RNK-3",), "an underscore is not a letter or digit: logs is named, logs-eu is not"),
        ("tail logs-eu2", ("RNK-3",), "logs-eu followed by a digit is not named; logs is"),
        ("logs", ("RNK-3", "RNK-2"), "a server id that is also a tool word"),
        ("github", ("RNK-3", "DSC-10"), "the server id alone makes every tool of the server relevant"),
        ("查github的日志", ("RNK-3", "RNK-5", "RNK-7"), "a Chinese letter before the id: not named"),
        ("查看 github 的日志", ("RNK-3", "RNK-5", "RNK-6"), "spaces around the id: named"),
        ("@Linear: create issue", ("RNK-3", "RNK-2"), "punctuation around the id"),
    ),
    # readOnlyHint, aliases, read intent and ties.
    *_cases(
        NO_PROMPT,
        ("query", ("RNK-4", "RNK-8"), 'readOnlyHint "true" is not true: the two query_logs tie'),
        ("query logs", ("RNK-3", "RNK-2"), "logs is a word hit and names the server logs, not logs-eu"),
        ("tail the log", ("RNK-4", "RNK-8"), "readOnlyHint 1 is not true"),
        ("PR", ("RNK-5", "DSC-10"), "the alias pr fires pull_request"),
        ("pr 合并请求", ("RNK-5",), "two aliases with the same target both count"),
        ("project status", ("RNK-5", "RNK-7"), "pr does not fire inside project"),
        ("PRs to review", ("RNK-5", "RNK-6", "RNK-7"), "prs is not pr; review is a read signal"),
        ("pr-17 please", ("RNK-5", "RNK-7"), "a hyphen ends the alias"),
        ("看PR列表", ("RNK-1", "RNK-5", "RNK-7"), "PR inside a run of Chinese letters does not fire"),
        ("ｐｒ", ("RNK-1", "RNK-5", "RNK-7"), "a fullwidth pr is not the ASCII trigger"),
        ("工单", ("RNK-5",), "issue as a substring: reissue_invite gains too"),
        ("工单 工单", ("RNK-5",), "an alias fires once however often it occurs"),
        ("评审", ("RNK-5",), "review as a substring: preview_roadmap gains too"),
        ("日志", ("RNK-5",), "log as a substring: changelog and delete_logs gain too"),
        ("查询日志", ("RNK-5", "RNK-6"), "a read signal and an alias inside one Chinese word"),
        ("list", ("RNK-6", "RNK-2"), "a read signal that is also a word hit"),
        ("show recent errors", ("RNK-6",), "two read signals fire once"),
        ("summary", ("RNK-6", "RNK-2"), "summary is a read signal"),
        ("summarize errors", ("RNK-6",), "summarize is not summary"),
        ("review the changes", ("RNK-6", "RNK-2"), "review is a read signal"),
        ("最近的发布", ("RNK-6", "DSC-10"), "a Chinese read signal as a substring; nothing relevant"),
        ("recent", ("RNK-6", "DSC-10"), "read intent alone makes nothing relevant"),
        ("delete old logs", ("RNK-6",), "without a read signal a write tool keeps its score"),
        ("list and delete old logs", ("RNK-6",), "with a read signal a write tool loses 32"),
        ("get or create a label", ("RNK-6", "RNK-2"), "get is a read verb of names, not a read signal"),
        ("show the label", ("RNK-6",), "a name with read and write words gets both"),
        ("show metrics", ("RNK-6",), "show is a read signal, not a read verb of names"),
        ("listing services", ("RNK-6", "RNK-7"), "listing is not the signal list"),
        ("search issues", ("RNK-6", "RNK-8"), "search is a read signal and a hit"),
        ("工单 comment", ("RNK-5", "RNK-2", "RNK-8"), "an alias and a word hit weigh the same: the name decides"),
        ("review the pull request and merge it", ("RNK-6",), "the write penalty against two word hits"),
        ("list attachment; github: create pull request", ("RNK-6", "RNK-8"), "a write tool ties a read tool"),
        ("find asset; Linear: update state, priority", ("RNK-6", "RNK-8"), "a write tool ties a read tool"),
        ("create issue", ("RNK-8",), "equal scores: Linear before github by code point"),
        ("issues", ("RNK-8", "RNK-4"), "equal scores across servers"),
        ("list services", ("RNK-8", "RNK-6"), "logs-eu__list_services before logs__list_services"),
        ("zebra", ("DSC-10",), "no relevance signal: discovery activates nothing"),
        ("", ("RNK-4", "RNK-8", "DSC-10"), "an empty message: annotations and names decide"),
    ),
    # System prompts: words count 2, server ids 3, and triggers never fire from them.
    *_cases(
        RELEASE,
        ("hello", ("RNK-2", "RNK-3", "DSC-10"), "the prompt's words and server id score, but are not relevance"),
        ("changelog of the release", ("RNK-2",), "message and prompt hits add up"),
        ("list open issues", ("RNK-2", "RNK-3", "RNK-6"), "the prompt lifts github over Linear"),
        ("PR", ("RNK-5", "RNK-2"), "an alias with prompt hits"),
        ("merge it", ("RNK-2",), "a write tool without read intent"),
    ),
    *_cases(
        OPS_ZH,
        ("deploy status", ("RNK-7", "DSC-10"), "aliases in the prompt never fire"),
        ("日志", ("RNK-5", "RNK-7"), "the alias fires from the message only"),
        ("列出服务", ("RNK-6", "RNK-7"), "a read signal in the message, with a Chinese prompt"),
    ),
    *_cases(
        TRACKER,
        ("delete old logs", ("RNK-7", "RNK-6", "RNK-3"), "list in the prompt is no read signal"),
        ("issues", ("RNK-3", "RNK-2", "RNK-8"), "the prompt names Linear (+3), logs-eu and logs"),
        ("tail the log", ("RNK-3", "RNK-2"), "prompt server ids break a tie"),
        ("sources", ("RNK-2", "DSC-10"), "a prompt-only word is no relevance"),
        ("linear", ("RNK-3",), "the server named in both"),
        ("search linear", ("RNK-3", "RNK-6"), "a named server's write tools under read intent"),
    ),
    *_cases(
        CAREFUL,
        ("push the files", ("RNK-2", "RNK-7"), "the prompt's 'never push' is only words"),
        ("read the report", ("RNK-2", "RNK-6"), "read is a read verb of names but not a read signal"),
        ("errors", ("RNK-7", "RNK-2"), "summary in the prompt is no read signal"),
        ("show the label", ("RNK-6", "RNK-2"), "the read bonus against prompt hits"),
    ),
    # Counting once, where counting twice would change the order.
    *_cases(
        NO_PROMPT,
        ("service service archive", ("RNK-2", "RNK-8"), "a word said twice ties a word said once: the name decides"),
        ("pr 合并请求: open issues in repository", ("RNK-5", "RNK-8"), "two aliases of one target tie two word hits"),
    ),
    # The first round merges the tools the message touches into the order the prompt and
    # the annotations give the others, where a boundary of the walk falls between them.
    *_cases(
        RELEASE,
        (
            "cycles days",
            ("SEL-5", "RNK-2", "RNK-3"),
            "a tool the prompt alone lifts (14) ranks between two message hits",
        ),
        (
            "add reviews",
            ("SEL-5", "RNK-2", "RNK-8"),
            "a message hit (12) one point above a prompt-only tool named before it",
        ),
    ),
    # A server id inside a word of the prompt does not name the server (RNK-3.3).
    *_cases(
        "Never read the blogs.",
        ("tail the log", ("RNK-3", "RNK-7", "RNK-8"), "logs inside blogs names no server: the names decide"),
    ),
)

# Tool names outside the provider rule `^[A-Za-z0-9_-]{1,64}$`: how an implementation exposes
# them is implementation-defined, so these vectors are for checking a ranker directly.
NAMES = (
    _server(
        "feishu",
        ("发送消息", "向群聊发送一条消息。Send a message to a chat.", False),
        ("列出群聊", "列出我加入的群聊。", True),
        ("查询日程", "查询今天的日程。", True),
        ("创建文档", "创建一篇新文档。"),
        ("导出日志", "导出审计日志。Export the audit log.", True),
        ("合并请求_list", "列出合并请求。", True),
    ),
    _server(
        "wiki",
        ("Straße_suchen", "Eine Straße suchen.", True),
        ("ﬁnd_page", "Find a page by title.", True),
        ("ΣΕΛΙΔΑ_list", "Λίστα σελίδων.", True),
        ("İndex_view", "View the index.", True),
        ("ＬＩＳＴ_pages", "Pages, listed by a fullwidth name.", True),
        ("PULL_REQUEST_export", "Export pull requests as PDF."),
        ("Logbook_edit", "Edit the logbook.", False),
    ),
)

NAMES_CASES = tuple(
    _cases(
        NO_PROMPT,
        ("查询日程", ("RNK-1", "RNK-6"), "a Chinese tool name is one word"),
        ("列出合并请求", ("RNK-5", "RNK-6"), "合并请求 fires pull_request, which no Chinese name contains"),
        ("日志", ("RNK-5",), "log as a substring of a casefolded name"),
        ("pr", ("RNK-5",), "the target is found in the casefolded name PULL_REQUEST_export"),
        ("strasse suchen", ("RNK-1",), "ß in a name folds to ss"),
        ("find a page", ("RNK-1", "RNK-6"), "ﬁ in a name folds to fi, and find is a read verb"),
        ("list pages", ("RNK-1", "RNK-6"), "a fullwidth LIST is not the read verb list"),
        ("σελιδα", ("RNK-1",), "Greek capitals in a name"),
        ("i", ("RNK-1",), "İ in a name gives the word i"),
        ("edit the logbook", ("RNK-6", "RNK-2"), "no read signal: edit does not cost"),
        ("查看 wiki", ("RNK-3", "RNK-6"), "a server named next to a Chinese read signal"),
        ("消息", ("RNK-1", "DSC-10"), "part of a Chinese word is no hit"),
    )
)

# Every read and write verb of names (RNK-6.2, RNK-6.3) the workbench has no tool for, each
# next to a tool of neither kind that it would tie without its verb.
VERBS = (
    _server(
        "files",
        ("copy_file", "Copy one file."),
        ("view_file", "View one file."),
        ("zip_file", "Zip one file."),
        ("edit_file", "Edit one file."),
        ("remove_file", "Remove one file."),
        ("write_file", "Write one file."),
    ),
)

VERBS_CASES = tuple(
    _cases(
        NO_PROMPT,
        ("show one file", ("RNK-6",), "under read intent view gains 8; edit, remove and write lose 32"),
        ("file summary", ("RNK-6",), "summary is a read signal"),
        ("file", ("RNK-6", "RNK-8"), "without a read signal no verb of a name counts: the names decide"),
        ("view or edit a file", ("RNK-6", "RNK-8"), "view is a read verb of names, not a read signal"),
    )
)


# Cases that isolate one sentence each ---------------------------------------------------------
#
# Each group below pins the sentences of one clause with small catalogs where every other
# term of the formula is held fixed or zero: a ranker that breaks any other sentence (but
# those a case assumes, each isolated by cases of its own) ranks them the same, so a
# difference names the sentence. A weight one off shows only against another term, so the
# weight cases compare with a term of the same clause where one exists, and otherwise
# with terms whose own cases they assume; the prompts that weigh against them are long
# lists of plain words.

_NATO = [
    "alfa",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliett",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
]


def _nato(first: int, count: int) -> str:
    """``count`` NATO words from the ``first``th on, in lower case: words for a description."""
    return " ".join(_NATO[first : first + count]) + "."


SPELLING = f"Spell with {' '.join(_NATO)}."


def _isolating(isolates: tuple[str, ...], assumes: tuple[str, ...], prompt: str, *rows: tuple[str, str]) -> list[Case]:
    clauses = tuple(dict.fromkeys(sentence.split(".")[0] for sentence in isolates))
    return [Case(description, clauses, message, prompt, isolates, assumes) for message, description in rows]


# RNK-1: words. Each message hits one tool, or none, besides the read-only control
# `a_widget` (15), which every message hits so that discovery has something to find.
WORDS = (
    _server(
        "docs",
        ("a_widget", "A widget.", True),
        ("ship_logs", "Send output away."),
        ("files_keeper", "Keep two folders equal."),
        ("strasse_map", "Maps of towns."),
        ("mirror", "Copy the archive."),
        ("forecast", "天气预报，每天更新。"),
        ("trace", "Trace by id."),
    ),
)

WORDS_CASES = (
    *_isolating(
        ("RNK-1.1",),
        (),
        NO_PROMPT,
        ("logs widget", "an underscore separates the words of a name: ship_logs has the word logs"),
        ("ﬁles widget", "casefolding, not lowercasing: the ligature ﬁ folds to fi, so files is hit"),
        ("STRAẞE widget", "the capital ẞ folds to ss: strasse is hit"),
        ("MIRROR widget", "casefolding: MIRROR is the word mirror"),
        ("ｍｉｒｒｏｒ widget", "no normalization: a fullwidth ｍｉｒｒｏｒ is not mirror"),
        ("mirror٣ widget", "an Arabic-Indic digit is a digit: mirror٣ is one word, not mirror"),
        ("İd widget", "İ folds to i and a combining dot, a mark that separates words: id is not a word here"),
    ),
    *_isolating(
        ("RNK-1.2",),
        (),
        NO_PROMPT,
        ("天气 widget", "a run of Chinese characters is one word: 天气 is not a word of 天气预报"),
    ),
    *_isolating(
        ("RNK-1.2",),
        ("RNK-1.1", "RNK-1.3"),
        NO_PROMPT,
        ("天气预报 widget", "the whole run is the word: one hit, not four"),
    ),
    *_isolating(
        ("RNK-1.3",),
        (),
        NO_PROMPT,
        ("archive widget", "a word of the description only: mirror has the word archive"),
    ),
)

# RNK-2: hits. Message hits (12) weigh against prompt hits (2), both of this clause; the
# prompt spells out the NATO alphabet. A message hit one point off moves four_terms (48)
# across spelled (50, 25 prompt hits) or one_term (46, one hit and 17 prompt hits), and so
# does a prompt hit one point off.
HITS = (
    _server(
        "kb",
        ("four_terms", "Four terms: amber basalt cobalt dune."),
        ("one_term", f"Terms: amber and {_nato(0, 17)}"),
        ("spelled", f"Spelled: {_nato(0, 25)}"),
        ("pair_terms", "Pair of terms: flint granite."),
        ("single_term", "Single term: ember."),
    ),
)

HITS_CASES = (
    *_isolating(
        ("RNK-2.1", "RNK-2.2"),
        ("RNK-1.3", "SEL-5.1", "DSC-10.2"),
        SPELLING,
        ("amber basalt cobalt dune", "four message hits (48) between 25 prompt hits (50) and one hit with 17 (46)"),
    ),
    *_isolating(
        ("RNK-2.3",),
        ("RNK-1.3",),
        NO_PROMPT,
        ("ember ember ember flint granite", "a word said three times counts once: two hits beat it"),
    ),
)

# RNK-3: server ids. 16 and 3 weigh against hits one point away, with the tie-break
# (RNK-8) deciding once a weight is one off: the tool that must stay second is named first.
SERVERS = (
    _server("zeta", ("beacon", "Beacon.")),
    _server("alpha", ("gadget", "Gadget.")),
    _server("omega", ("gizmo", "Sturdy gizmo.")),
    _server("kappa", ("lantern", "Lantern.")),
)

SERVERS_CASES = (
    *_isolating(
        ("RNK-3.1",),
        ("RNK-2.1", "RNK-3.2", "DSC-10.3"),
        "Prefer alpha.",
        ("zeta gadget", "zeta named (16) over a hit and alpha named in the prompt (15)"),
    ),
    *_isolating(
        ("RNK-3.1",),
        ("RNK-1.1", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-3.2", "DSC-10.1", "DSC-10.3"),
        "Prefer omega, sturdy ones.",
        ("kappa gizmo", "kappa named (16) under a hit, a prompt hit and omega named in the prompt (17)"),
    ),
)

# The server listed first holds the tool the first round takes, so that a walk of the servers
# in their configured order does not decide it; a first round of one tool out of two servers
# still relies on the walk being one global ranking (SEL-5.1), which a walk of the servers
# in any other order breaks.
PROMPT_SERVERS = (_server("iota", ("hush", "Quiet and plain.")), _server("eta", ("anvil", "Anvil.")))

PROMPT_SERVERS_CASES = tuple(
    _isolating(
        ("RNK-3.2",),
        ("SEL-5.1", "RNK-1.1", "RNK-1.3", "RNK-2.2", "DSC-10.2"),
        "Use eta for quiet plain work.",
        ("hello", "eta named in the prompt (3) under two prompt hits (4), in the first round"),
    )
)

PROMPT_SERVER = (_server("mu", ("sprocket", "Sprocket.")), _server("beta", ("ladle", "Gentle ladle.")))

PROMPT_SERVER_CASES = tuple(
    _isolating(
        ("RNK-3.2",),
        ("SEL-5.1", "RNK-2.2", "DSC-10.2"),
        "Use mu for gentle work.",
        ("hello", "mu named in the prompt (3) over one prompt hit (2), in the first round"),
    )
)

BOUNDARIES = (
    _server("linear", ("planner", "Planner.")),
    _server("zinc", ("nail", "Nail.")),
)

BOUNDARIES_CASES = tuple(
    _isolating(
        ("RNK-3.3",),
        (),
        NO_PROMPT,
        ("nonlinear nail", "inside a word the id names nothing"),
        ("linear2 nail", "a digit after the id: not named"),
        ("linear-time nail", "a hyphen is neither a letter nor a digit: named"),
    )
)

# RNK-4: readOnlyHint. A hint that is not the JSON value true against a prompt hit (2),
# and the 3 of true against prompt hits one point away.
HINTS = (
    _server(
        "shelf",
        ("plain_flask", "Plain flask, tidy."),
        ("quoted_flask", "Quoted flask.", "true"),
        ("plain_jar", "Plain jar, tidy."),
        ("whole_jar", "Whole jar.", 1),
    ),
)

HINTS_CASES = tuple(
    _isolating(
        ("RNK-4.1",),
        ("DSC-10.2",),
        "Keep it tidy.",
        ("flask", 'readOnlyHint "true" scores nothing: a prompt hit (14) ranks over it (12)'),
        ("jar", "readOnlyHint 1 scores nothing: a prompt hit (14) ranks over it (12)"),
    )
)

READ_ONLY = (
    _server(
        "desk",
        ("m_reader", "Reader.", True),
        ("n_note", "Calm brief note."),
        ("b_memo", "Gentle memo."),
    ),
)

READ_ONLY_CASES = (
    *_isolating(
        ("RNK-4.1",),
        ("RNK-1.1", "RNK-1.3", "RNK-2.2", "DSC-10.2"),
        "Keep it calm and brief.",
        ("hello", "read-only (3) under two prompt hits (4), in the first round"),
    ),
    *_isolating(
        ("RNK-4.1",),
        ("RNK-2.2", "DSC-10.2"),
        "Stay gentle.",
        ("hello", "read-only (3) over one prompt hit (2), in the first round"),
    ),
)

# RNK-5: aliases. Each trigger makes its target's tool relevant; the weight of 12 against
# message and prompt hits; two triggers of one target both count.
ALIAS_TABLE = (
    _server(
        "forge",
        ("issue_board", "Board."),
        ("open_pull_request", "Open change."),
        ("review_queue", "Queue."),
        ("log_sink", "Sink."),
    ),
)

ALIAS_TABLE_CASES = tuple(
    _isolating(
        ("RNK-5.1",),
        (),
        NO_PROMPT,
        ("工单", "工单 fires issue"),
        ("pr", "pr fires pull_request"),
        ("合并请求", "合并请求 fires pull_request"),
        ("评审", "评审 fires review"),
        ("日志", "日志 fires log"),
    )
)

ALIAS_WEIGHTS = (
    _server(
        "mill",
        ("basalt_marker", f"Basalt marker: {_nato(0, 11)}", True),
        ("issue_pull_request", "Link."),
        ("marker_amber", f"Amber marker: {_nato(0, 11)}"),
    ),
)

ALIAS_WEIGHTS_CASES = (
    *_isolating(
        ("RNK-5.2",),
        ("RNK-1.3", "RNK-2.2", "RNK-5.1", "RNK-5.3", "DSC-10.2"),
        SPELLING,
        ("pr 合并请求 工单 amber", "three aliases (36) over a hit and 11 prompt hits (34)"),
    ),
    *_isolating(
        ("RNK-5.2",),
        ("RNK-1.3", "RNK-2.2", "RNK-4.1", "RNK-5.1", "RNK-5.3", "DSC-10.1", "DSC-10.2"),
        SPELLING,
        ("pr 合并请求 工单 basalt", "three aliases (36) under a hit, 11 prompt hits and read-only (37)"),
    ),
)

ALIAS_PAIRS = (
    _server(
        "yard",
        ("pull_request_card", "Card."),
        ("tag_cobalt", f"Cobalt tag: {_nato(0, 3)}"),
    ),
)

ALIAS_PAIRS_CASES = tuple(
    _isolating(
        ("RNK-5.3",),
        ("RNK-1.3",),
        SPELLING,
        ("pr 合并请求 cobalt", "two aliases of one target count twice (24) over a hit and 3 prompt hits (18)"),
    )
)

# RNK-6: read intent. With it, the read verb's 8 lifts a hit (20) over a read-only hit (15),
# which ranks first without it; the write verb's -32 sinks a tool under another.
SIGNALS = (_server("desk", ("list_quill", "Quill list."), ("quill_rack", "Quill rack.", True)),)

SIGNALS_CASES = tuple(
    _isolating(
        ("RNK-6.1",),
        ("RNK-1.1",),
        NO_PROMPT,
        ("recent quill", "recent is a read signal"),
        ("summary quill", "summary is a read signal"),
        ("查看 quill", "查看 is a read signal"),
    )
)

READ_VERBS_GROUP = (_server("desk", ("view_lamp", "Lamp view."), ("wick_lamp", "Lamp wick.", True)),)

READ_VERBS_CASES = tuple(
    _isolating(("RNK-6.2",), ("RNK-1.1",), NO_PROMPT, ("show lamp", "view is a read verb of names"))
)

READ_BONUS = (
    _server(
        "desk",
        ("get_cup", "Cup."),
        ("h_cup", "Cup: oak pine elm.", True),
        ("b_bowl", "Bowl: fir yew.", True),
    ),
)

READ_BONUS_CASES = (
    *_isolating(
        ("RNK-6.2",),
        ("RNK-1.1", "RNK-1.3", "RNK-2.2", "RNK-4.1", "DSC-10.2"),
        "Think oak pine elm.",
        ("show", "the read bonus (8) under read-only and three prompt hits (9), in the first round"),
    ),
    *_isolating(
        ("RNK-6.2",),
        ("RNK-1.1", "RNK-1.3", "RNK-2.2", "RNK-4.1", "SEL-5.1", "DSC-10.2"),
        "Think fir yew.",
        ("show", "the read bonus (8) over read-only and two prompt hits (7), in the first round"),
    ),
)

WRITE_PENALTY = (
    _server(
        "desk",
        ("create_pen", "Pen ink nib."),
        ("pad", "Pad, soft.", True),
        ("a_tray", "Tray.", True),
    ),
)

WRITE_PENALTY_CASES = tuple(
    _isolating(
        ("RNK-6.3",),
        ("RNK-1.1", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-4.1", "RNK-6.6", "SEL-5.1", "DSC-10.2"),
        "Be soft.",
        (
            "show pen ink nib",
            "three hits less the write penalty (4) between read-only with a prompt hit (5) and read-only (3)",
        ),
    )
)

BOTH_VERBS = (_server("desk", ("get_or_create_tag", "Tag."), ("update_tag", "Tag.", True)),)

BOTH_VERBS_CASES = tuple(
    _isolating(
        ("RNK-6.4",),
        ("RNK-1.1", "RNK-6.6", "DSC-10.2"),
        NO_PROMPT,
        ("show tag", "a read and a write verb (12 + 8 - 32) over a write verb and read-only (12 - 32 + 3)"),
    )
)

NO_SIGNAL = (_server("desk", ("create_card", "Card stock."), ("z_card", "Card.")),)

NO_SIGNAL_CASES = tuple(
    _isolating(
        ("RNK-6.5",),
        ("RNK-1.1",),
        NO_PROMPT,
        ("card stock", "without a read signal a write verb costs nothing: two hits (24) over one (12)"),
    )
)

NUDGE = (_server("desk", ("a_rope", "Rope."), ("delete_rope", "Rope.")),)

NUDGE_CASES = tuple(
    _isolating(
        ("RNK-6.6",),
        ("RNK-1.1", "DSC-10.2"),
        NO_PROMPT,
        ("show rope", "under read intent a write tool still ranks, last, and discovery still activates it"),
    )
)

# RNK-7: triggers.
PROMPT_TRIGGERS = (
    _server(
        "desk",
        ("a_plate", "Plate.", True),
        ("list_plate", "Plate list."),
        ("b_bell", "Bell.", True),
        ("issue_bell", "Bell issue."),
    ),
)

PROMPT_TRIGGERS_CASES = tuple(
    _isolating(
        ("RNK-7.1",),
        ("RNK-1.1", "DSC-10.2"),
        "Always list your sources.",
        ("plate", "a read signal in the prompt is no read intent: read-only (15) stays over the read verb (12)"),
    )
) + tuple(
    _isolating(
        ("RNK-7.1",),
        ("RNK-1.1", "DSC-10.2"),
        "工单 first.",
        ("bell", "an alias in the prompt fires nothing: read-only (15) stays over the target (12)"),
    )
)

WHOLE_WORDS = (
    _server(
        "desk",
        ("open_pull_request", "Open change."),
        ("a_stamp", "Stamp.", True),
        ("list_stamp", "Stamp list."),
        ("rivet", "Rivet."),
    ),
)

WHOLE_WORDS_CASES = tuple(
    _isolating(
        ("RNK-7.2",),
        ("RNK-1.1", "DSC-10.2"),
        NO_PROMPT,
        ("project rivet", "pr does not fire inside project"),
        ("listing stamp", "list is no read signal inside listing: read-only (15) stays over the read verb (12)"),
    )
)

SUBSTRINGS = (_server("desk", ("rivet", "Rivet.", True), ("sink_log", "Sink.")),)

SUBSTRINGS_CASES = tuple(
    _isolating(("RNK-7.3",), (), NO_PROMPT, ("导出日志 rivet", "日志 fires inside the word 导出日志"))
)

SERVER_TRIGGERS = (_server("db-2", ("table", "Table.")), _server("kit", ("rivet", "Rivet.")))

SERVER_TRIGGERS_CASES = tuple(
    _isolating(
        ("RNK-7.4",),
        ("RNK-3.3",),
        NO_PROMPT,
        ("xdb-2 rivet", "an id with a hyphen and a digit is not named inside a word"),
        ("db-2x rivet", "nor with a letter after it"),
    )
)

# RNK-8: ties. Four tools with one hit each, named so that code-point order differs from
# casefolded order, from the listing order, and from ordering by server then tool or by tool.
TIES = (
    _server("kilo", ("widget_b", "Widget."), ("widget_a", "Widget.")),
    _server("Lima", ("widget_c", "Widget.")),
    _server("kilo-x", ("widget_d", "Widget.")),
)

TIES_CASES = tuple(
    _isolating(
        ("RNK-8.1",),
        ("DSC-10.3",),
        NO_PROMPT,
        ("widget", "equal scores: Lima__widget_c, kilo-x__widget_d, kilo__widget_a, kilo__widget_b"),
    )
)

# SEL-5: the first round's one global ranking. The server listed first has the lower
# scores; a first round that walks the servers one after another takes its tools.
GLOBAL = (
    _server("first", ("hinge", "Hinge.")),
    _server("second", ("spelled_out", f"Spelled: {_nato(0, 14)}"), ("spelled_less", f"Spelled: {_nato(0, 13)}")),
)

GLOBAL_CASES = (
    *_isolating(
        ("SEL-5.1",),
        ("RNK-1.1", "RNK-1.3", "DSC-10.2"),
        SPELLING,
        ("hinge", "prompt hits (28, 26) over a message hit (12) of the server listed first"),
    ),
)

# The first round ranks with the user message: read intent lifts a read verb (8) over
# read-only (3), and a write verb sinks the one tool the message hits (12 - 32).
WITH_MESSAGE = (_server("shed", ("list_tools", "Inventory."), ("zed", "Zed.", True), ("create_hinge", "Hinge.")),)

WITH_MESSAGE_CASES = tuple(
    _isolating(
        ("SEL-5.1",),
        ("RNK-1.1", "RNK-6.6", "DSC-10.2"),
        NO_PROMPT,
        ("show hinge", "the first round ranks with the message: the read verb (8) over read-only (3)"),
    )
)

# DSC-10: discovery ranks with the first-round scorer and the system prompt (10.1), takes
# only candidates with a relevance signal (10.2), and in ranking order (10.3).
PROMPT_KEPT = (_server("desk", ("a_brush", f"Brush: {_nato(0, 13)}"), ("brush_comb", "Brush and comb.")),)

PROMPT_KEPT_CASES = tuple(
    _isolating(
        ("DSC-10.1",),
        ("RNK-1.3", "RNK-2.2"),
        SPELLING,
        ("brush comb", "a hit and 13 prompt hits (38) over two hits (24)"),
    )
)

RELEVANCE = (
    _server(
        "desk",
        ("a_spoon", "Spoon."),
        ("prompted", "Crisp."),
        ("marked", "Marked.", True),
        # A hyphen, not an underscore, so that its read verb is a word whatever a ranker
        # makes of underscores (RNK-1.1); and list, which every ranker's list of read verbs has.
        ("list-x", "Lister."),
    ),
)

RELEVANCE_CASES = tuple(
    _isolating(
        ("DSC-10.2",),
        (),
        "Crisp answers.",
        ("show spoon", "a prompt hit, read-only and the read bonus are no relevance"),
    )
)

# Words in the names, which no wrong casefolding or tokenization of the names' letters or of
# descriptions changes.
ORDER = (_server("desk", ("a-awl", "Tool."), ("z-awl-file", "Tool.")),)

ORDER_CASES = tuple(
    _isolating(("DSC-10.3",), (), NO_PROMPT, ("awl file", "the best-ranked first, though listed and named after"))
)

GROUPS = (
    Group(
        "workbench",
        "Four servers whose names every provider accepts, with English and Chinese descriptions.",
        WORKBENCH,
        WORKBENCH_CASES,
    ),
    Group(
        "names",
        "Tool names in Chinese, German, Greek and fullwidth letters, which no provider accepts as they are.",
        NAMES,
        NAMES_CASES,
    ),
    Group(
        "verbs",
        "One server whose tool names carry the read and write verbs the workbench has no tool for.",
        VERBS,
        VERBS_CASES,
    ),
    Group("words", "Words (RNK-1): casefolding, letters and digits, Chinese runs, descriptions.", WORDS, WORDS_CASES),
    Group("hits", "Message and prompt hits (RNK-2): their weights, and a word counting once.", HITS, HITS_CASES),
    Group("servers", "A server named in the message (RNK-3.1).", SERVERS, SERVERS_CASES),
    Group("prompt-servers", "A server named in the system prompt (RNK-3.2).", PROMPT_SERVERS, PROMPT_SERVERS_CASES),
    Group("prompt-server", "A server named in the system prompt (RNK-3.2).", PROMPT_SERVER, PROMPT_SERVER_CASES),
    Group("boundaries", "Where a server id names its server (RNK-3.3).", BOUNDARIES, BOUNDARIES_CASES),
    Group("hints", "readOnlyHint values that are not the JSON value true (RNK-4.1).", HINTS, HINTS_CASES),
    Group("read-only", "The 3 of readOnlyHint true (RNK-4.1).", READ_ONLY, READ_ONLY_CASES),
    Group("alias-table", "Each alias and its target (RNK-5.1).", ALIAS_TABLE, ALIAS_TABLE_CASES),
    Group("alias-weights", "The 12 of an alias (RNK-5.2).", ALIAS_WEIGHTS, ALIAS_WEIGHTS_CASES),
    Group("alias-pairs", "Two aliases of one target (RNK-5.3).", ALIAS_PAIRS, ALIAS_PAIRS_CASES),
    Group("signals", "Read signals (RNK-6.1).", SIGNALS, SIGNALS_CASES),
    Group("read-verbs", "Read verbs of names (RNK-6.2).", READ_VERBS_GROUP, READ_VERBS_CASES),
    Group("read-bonus", "The 8 of a read verb (RNK-6.2).", READ_BONUS, READ_BONUS_CASES),
    Group("write-penalty", "The -32 of a write verb (RNK-6.3).", WRITE_PENALTY, WRITE_PENALTY_CASES),
    Group("both-verbs", "A name with a read and a write verb (RNK-6.4).", BOTH_VERBS, BOTH_VERBS_CASES),
    Group("no-signal", "No read signal, no read intent (RNK-6.5).", NO_SIGNAL, NO_SIGNAL_CASES),
    Group("nudge", "Read intent is a nudge, not a filter (RNK-6.6).", NUDGE, NUDGE_CASES),
    Group(
        "prompt-triggers",
        "Triggers in the system prompt fire nothing (RNK-7.1).",
        PROMPT_TRIGGERS,
        PROMPT_TRIGGERS_CASES,
    ),
    Group("whole-words", "ASCII triggers match whole words (RNK-7.2).", WHOLE_WORDS, WHOLE_WORDS_CASES),
    Group("substrings", "Other triggers match as substrings (RNK-7.3).", SUBSTRINGS, SUBSTRINGS_CASES),
    Group("server-triggers", "Server ids with other characters (RNK-7.4).", SERVER_TRIGGERS, SERVER_TRIGGERS_CASES),
    Group("ties", "Equal scores (RNK-8.1).", TIES, TIES_CASES),
    Group("global", "One global ranking across servers (SEL-5.1).", GLOBAL, GLOBAL_CASES),
    Group("with-message", "The first round ranks with the user message (SEL-5.1).", WITH_MESSAGE, WITH_MESSAGE_CASES),
    Group("prompt-kept", "Discovery keeps the system prompt (DSC-10.1).", PROMPT_KEPT, PROMPT_KEPT_CASES),
    Group("relevance", "What is and is not a relevance signal (DSC-10.2).", RELEVANCE, RELEVANCE_CASES),
    Group("order", "Discovery in ranking order (DSC-10.3).", ORDER, ORDER_CASES),
)
