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
)
