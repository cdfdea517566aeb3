"""Domain vocabularies: the entities, verbs and fixed actions generated tools are made of.

Everything here is plain, ordered data (tuples, never sets), so that generation is
byte-for-byte reproducible. Human words ("pull request") become snake_case names
(``list_pull_requests``) and natural descriptions.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DOMAINS", "VERBS", "Action", "Domain", "Entity", "Param", "Verb", "with_article"]


@dataclass(frozen=True, slots=True)
class Param:
    """One input-schema property. ``kind`` is string, integer, boolean, date, enum or strings."""

    name: str
    kind: str
    doc: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Entity:
    one: str
    many: str
    verbs: tuple[str, ...]
    fields: tuple[Param, ...]
    parent: str = ""


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    description: str
    read: bool
    params: tuple[Param, ...]
    required: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Domain:
    key: str
    label: str
    container: str
    context: tuple[Param, ...]
    entities: tuple[Entity, ...]
    actions: tuple[Action, ...] = ()
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class Verb:
    word: str
    read: bool
    plural: bool
    templates: tuple[str, ...]
    destructive: bool = False
    idempotent: bool = False
    extra: tuple[Param, ...] = ()


# Letters whose English names begin with a vowel sound: "an SLO", "an HTTP check", but "a DNS record".
_VOWEL_SOUND_LETTERS = "AEFHILMNORSX"
# Acronyms said as a word: "a SQL query" ("sequel").
_SAID_AS_WORDS = ("SQL",)
# Words spelt with a vowel but said with a consonant: "a user", "a unit", "a one-off".
_CONSONANT_SOUND_STARTS = ("use", "uni", "one", "eu")


def with_article(noun: str) -> str:
    """``noun`` with its indefinite article: ``an issue``, ``a user``, ``an SLO``, ``a DNS record``."""
    word = noun.split()[0].split("-")[0] if noun.strip() else ""
    if not word:
        return noun
    if word in _SAID_AS_WORDS:
        vowel = False
    elif word.isupper():
        vowel = word[0] in _VOWEL_SOUND_LETTERS
    else:
        lower = word.lower()
        vowel = lower[0] in "aeiou" and not lower.startswith(_CONSONANT_SOUND_STARTS)
    return f"{'an' if vowel else 'a'} {noun}"


def _p(name: str, kind: str, doc: str) -> Param:
    if kind.startswith("enum:"):
        return Param(name, "enum", doc, tuple(kind[5:].split("|")))
    return Param(name, kind, doc)


def _e(one: str, many: str, verbs: str, *fields: Param, parent: str = "") -> Entity:
    return Entity(one, many, tuple(verbs.split()), fields, parent)


def _a(name: str, description: str, read: bool, *params: Param, required: str = "") -> Action:
    return Action(name, description, read, params, tuple(required.split()))


def _v(word: str, read: bool, plural: bool, *templates: str, **kw: object) -> Verb:
    return Verb(word, read, plural, templates, **kw)  # type: ignore[arg-type]


VERBS: dict[str, Verb] = {
    v.word: v
    for v in (
        _v(
            "list",
            True,
            True,
            "List {many} in the {container}.",
            "List the {many} of {a_container}, newest first.",
            "Return one page of {many} from the {container}.",
            idempotent=True,
        ),
        _v(
            "get",
            True,
            False,
            "Get {a_one} by ID, including its {attrs}.",
            "Fetch the full details of a single {one}.",
            "Retrieve one {one} with its {attrs}.",
            idempotent=True,
        ),
        _v(
            "get_all",
            True,
            True,
            "Get all {many} on {a_parent}, oldest first.",
            "Fetch every {one} attached to {a_parent}.",
            idempotent=True,
        ),
        _v(
            "search",
            True,
            True,
            "Search {many} by keyword across the {container}.",
            "Find {many} whose text matches a query, ranked by relevance.",
            "Full-text search over {many}.",
            idempotent=True,
        ),
        _v("describe", True, False, "Describe {a_one}: its {attrs} and current status.", idempotent=True),
        _v("view", True, False, "View {a_one} as it appears to users, with its {attrs}.", idempotent=True),
        _v(
            "export",
            True,
            True,
            "Export {many} from the {container} as CSV or JSON for a report.",
            idempotent=True,
            extra=(_p("format", "enum:csv|json", "Output format"),),
        ),
        _v("download", True, False, "Download the content of {a_one} as a file.", idempotent=True),
        _v("count", True, True, "Count the {many} in the {container} that match the filters.", idempotent=True),
        _v(
            "create",
            False,
            False,
            "Create a new {one} in the {container}.",
            "Create {a_one} with the given {attrs}.",
            "Add a new {one} to the {container}.",
        ),
        _v(
            "update",
            False,
            False,
            "Update the {attrs} of an existing {one}.",
            "Change fields of {a_one}; fields left out are kept.",
            idempotent=True,
        ),
        _v(
            "delete",
            False,
            False,
            "Delete {a_one} permanently. This cannot be undone.",
            "Remove {a_one} from the {container} for good.",
            destructive=True,
            idempotent=True,
        ),
        _v("archive", False, False, "Archive {a_one} so it no longer shows in active lists.", idempotent=True),
        _v(
            "close",
            False,
            False,
            "Close {a_one}, optionally with a final comment.",
            idempotent=True,
            extra=(_p("comment", "string", "Comment to add when closing"),),
        ),
        _v("reopen", False, False, "Reopen a closed {one}.", idempotent=True),
        _v(
            "merge",
            False,
            False,
            "Merge {a_one} into its base branch.",
            destructive=True,
            extra=(_p("merge_method", "enum:merge|squash|rebase", "How to merge the commits"),),
        ),
        _v(
            "assign",
            False,
            False,
            "Assign {a_one} to a user.",
            idempotent=True,
            extra=(_p("assignee", "string", "Username of the person to assign"),),
        ),
        _v("approve", False, False, "Approve {a_one}.", idempotent=True),
        _v("cancel", False, False, "Cancel a running {one}.", destructive=True, idempotent=True),
        _v("start", False, False, "Start a stopped {one}.", idempotent=True),
        _v("stop", False, False, "Stop a running {one}.", destructive=True, idempotent=True),
        _v("restart", False, False, "Restart {a_one}; in-flight work is interrupted.", destructive=True),
        _v("rerun", False, False, "Run a finished {one} again with the same inputs."),
        _v("publish", False, False, "Publish a draft {one} so that everyone can see it."),
        _v(
            "send",
            False,
            False,
            "Send {a_one} to its recipients.",
            extra=(_p("text", "string", "Text of the message"),),
        ),
        _v(
            "invite",
            False,
            False,
            "Invite a user to {a_one}.",
            extra=(_p("email", "string", "Email address to invite"),),
        ),
        _v(
            "move",
            False,
            False,
            "Move {a_one} to another {container}.",
            extra=(_p("target", "string", "Where to move it"),),
        ),
        _v(
            "rename",
            False,
            False,
            "Rename {a_one}.",
            idempotent=True,
            extra=(_p("new_name", "string", "The new name"),),
        ),
        _v("pin", False, False, "Pin {a_one} so it stays at the top.", idempotent=True),
        _v("acknowledge", False, False, "Acknowledge {a_one} so the on-call stops being paged.", idempotent=True),
        _v("resolve", False, False, "Mark {a_one} as resolved.", idempotent=True),
        _v(
            "mute",
            False,
            False,
            "Mute {a_one} for a while.",
            idempotent=True,
            extra=(_p("minutes", "integer", "How long to mute, in minutes"),),
        ),
        _v(
            "schedule",
            False,
            False,
            "Schedule {a_one} for a later time.",
            extra=(_p("at", "date", "When to run it (ISO 8601)"),),
        ),
        _v(
            "upload",
            False,
            False,
            "Upload {a_one} to the {container}.",
            extra=(_p("content", "string", "Base64-encoded file content"),),
        ),
        _v("add", False, False, "Add {a_one} to the {container}."),
        _v("remove", False, False, "Remove {a_one} from the {container}.", destructive=True, idempotent=True),
    )
}

_STATE = _p("state", "enum:open|closed|all", "Only return items in this state")
_LIMIT = _p("limit", "integer", "Maximum number of results to return")
_LABELS = _p("labels", "strings", "Labels to attach")
_TITLE = _p("title", "string", "A short title")
_BODY = _p("body", "string", "Body text in Markdown")
_NAME = _p("name", "string", "Name")
_SINCE = _p("since", "date", "Only items updated after this time (ISO 8601)")

CODE_HOSTING = Domain(
    key="code_hosting",
    label="Code hosting",
    container="repository",
    context=(_p("owner", "string", "Repository owner (user or organization)"), _p("repo", "string", "Repository name")),
    entities=(
        _e(
            "pull request",
            "pull requests",
            "list get search create update merge close reopen",
            _TITLE,
            _BODY,
            _p("head", "string", "Branch with the changes"),
            _p("base", "string", "Branch to merge into"),
            _STATE,
            _p("draft", "boolean", "Open as a draft"),
        ),
        _e(
            "issue",
            "issues",
            "list get search create update close reopen assign",
            _TITLE,
            _BODY,
            _LABELS,
            _STATE,
            _p("milestone", "integer", "Milestone number"),
        ),
        _e("issue comment", "issue comments", "list get_all create update delete", _BODY, parent="issue"),
        _e(
            "pull request review",
            "pull request reviews",
            "list get create approve",
            _BODY,
            _p("event", "enum:APPROVE|REQUEST_CHANGES|COMMENT", "Review verdict"),
            parent="pull request",
        ),
        _e(
            "branch",
            "branches",
            "list get create delete rename",
            _NAME,
            _p("from_ref", "string", "Commit or branch to start from"),
        ),
        _e(
            "commit",
            "commits",
            "list get search",
            _p("sha", "string", "Commit SHA"),
            _p("author", "string", "Author login"),
            _SINCE,
        ),
        _e(
            "release",
            "releases",
            "list get create update delete publish",
            _p("tag_name", "string", "Git tag of the release"),
            _NAME,
            _BODY,
            _p("prerelease", "boolean", "Mark as pre-release"),
        ),
        _e(
            "workflow run",
            "workflow runs",
            "list get cancel rerun",
            _p("status", "enum:queued|in_progress|completed", "Run status"),
            _p("branch", "string", "Branch name"),
        ),
        _e(
            "file",
            "files",
            "get search update delete",
            _p("path", "string", "Path of the file in the repository"),
            _p("ref", "string", "Branch, tag or commit"),
            _p("message", "string", "Commit message"),
        ),
        _e(
            "repository",
            "repositories",
            "list get search create archive",
            _NAME,
            _p("visibility", "enum:public|private|internal", "Who can see it"),
            _p("description", "string", "Short description"),
        ),
        _e("label", "labels", "list create delete", _NAME, _p("color", "string", "Hex color without #")),
        _e(
            "code scanning alert",
            "code scanning alerts",
            "list get",
            _p("severity", "enum:critical|high|medium|low", "Alert severity"),
            _STATE,
        ),
    ),
)

ISSUE_TRACKER = Domain(
    key="issue_tracker",
    label="Issue tracker",
    container="workspace",
    context=(),
    entities=(
        _e(
            "issue",
            "issues",
            "list get search create update archive assign",
            _TITLE,
            _p("description", "string", "Markdown description"),
            _p("team_id", "string", "Team that owns it"),
            _p("priority", "enum:urgent|high|medium|low|none", "Priority"),
            _LABELS,
            _p("status", "enum:backlog|todo|in_progress|done|canceled", "Workflow state"),
        ),
        _e("issue comment", "issue comments", "list get_all create update delete", _BODY, parent="issue"),
        _e(
            "project",
            "projects",
            "list get search create update archive",
            _NAME,
            _p("lead", "string", "Project lead"),
            _p("target_date", "date", "Target date"),
            _p("state", "enum:planned|started|paused|completed", "Project state"),
        ),
        _e(
            "cycle", "cycles", "list get create", _p("team_id", "string", "Team"), _p("starts_at", "date", "Start date")
        ),
        _e("team", "teams", "list get", _NAME, _p("key", "string", "Short team key")),
        _e("label", "labels", "list create delete", _NAME, _p("color", "string", "Hex color")),
        _e("milestone", "milestones", "list get create update", _NAME, _p("target_date", "date", "Due date")),
        _e(
            "attachment",
            "attachments",
            "list get_all create delete",
            _p("url", "string", "Link to attach"),
            _TITLE,
            parent="issue",
        ),
        _e("user", "users", "list get search", _NAME, _p("email", "string", "Email address")),
        _e(
            "document",
            "documents",
            "list get search create update",
            _TITLE,
            _p("content", "string", "Markdown content"),
        ),
    ),
)

BROWSER = Domain(
    key="browser",
    label="Browser automation",
    container="browser",
    context=(),
    prefix="browser_",
    entities=(
        _e("tab", "tabs", "list create close", _p("url", "string", "Address to open")),
        _e("cookie", "cookies", "list get delete", _p("domain", "string", "Cookie domain")),
        _e(
            "console message", "console messages", "list", _p("level", "enum:error|warning|info|debug", "Minimum level")
        ),
        _e("network request", "network requests", "list get", _p("url_pattern", "string", "Glob to match URLs")),
        _e("download", "downloads", "list get cancel", _p("filename", "string", "Saved file name")),
        _e("bookmark", "bookmarks", "list create delete", _TITLE, _p("url", "string", "Address")),
    ),
    actions=(
        _a(
            "browser_navigate",
            "Navigate the current tab to a URL and wait for the page to load.",
            False,
            _p("url", "string", "The URL to open"),
            required="url",
        ),
        _a("browser_navigate_back", "Go back to the previous page in the tab's history.", False),
        _a("browser_navigate_forward", "Go forward to the next page in the tab's history.", False),
        _a(
            "browser_take_screenshot",
            "Take a screenshot of the current page or of one element.",
            True,
            _p("element", "string", "Human-readable element description"),
            _p("full_page", "boolean", "Capture the whole page"),
            _p("type", "enum:png|jpeg", "Image format"),
        ),
        _a(
            "browser_snapshot",
            "Capture an accessibility snapshot of the current page; better than a screenshot for acting.",
            True,
        ),
        _a(
            "browser_click",
            "Click an element on the page.",
            False,
            _p("element", "string", "Human-readable element description"),
            _p("ref", "string", "Element reference from the snapshot"),
            _p("double_click", "boolean", "Double-click instead"),
            required="element ref",
        ),
        _a(
            "browser_type",
            "Type text into an editable element.",
            False,
            _p("ref", "string", "Element reference from the snapshot"),
            _p("text", "string", "Text to type"),
            _p("submit", "boolean", "Press Enter afterwards"),
            required="ref text",
        ),
        _a(
            "browser_hover",
            "Hover the mouse over an element.",
            False,
            _p("ref", "string", "Element reference"),
            required="ref",
        ),
        _a(
            "browser_press_key",
            "Press a key on the keyboard, such as ArrowLeft or Enter.",
            False,
            _p("key", "string", "Name of the key"),
            required="key",
        ),
        _a(
            "browser_select_option",
            "Select one or more options in a dropdown.",
            False,
            _p("ref", "string", "Element reference"),
            _p("values", "strings", "Values to select"),
            required="ref values",
        ),
        _a(
            "browser_fill_form",
            "Fill several form fields at once.",
            False,
            _p("fields", "strings", "Field values as ref=value pairs"),
            required="fields",
        ),
        _a(
            "browser_wait_for",
            "Wait for text to appear or disappear, or for a number of seconds.",
            True,
            _p("text", "string", "Text to wait for"),
            _p("time", "integer", "Seconds to wait"),
        ),
        _a(
            "browser_evaluate",
            "Evaluate a JavaScript expression on the page and return the result.",
            False,
            _p("function", "string", "JavaScript function source"),
            required="function",
        ),
        _a(
            "browser_file_upload",
            "Upload one or more files through the open file chooser.",
            False,
            _p("paths", "strings", "Absolute paths of the files"),
            required="paths",
        ),
        _a(
            "browser_drag",
            "Drag one element and drop it onto another.",
            False,
            _p("start_ref", "string", "Element to drag"),
            _p("end_ref", "string", "Drop target"),
            required="start_ref end_ref",
        ),
        _a(
            "browser_resize",
            "Resize the browser window.",
            False,
            _p("width", "integer", "Width in pixels"),
            _p("height", "integer", "Height in pixels"),
            required="width height",
        ),
        _a(
            "browser_handle_dialog",
            "Accept or dismiss a JavaScript dialog.",
            False,
            _p("accept", "boolean", "Accept the dialog"),
            _p("prompt_text", "string", "Text for a prompt dialog"),
            required="accept",
        ),
        _a("browser_pdf_save", "Save the current page as a PDF file.", False, _p("filename", "string", "File name")),
        _a("browser_close", "Close the browser and every tab.", False),
        _a("browser_get_page_text", "Read the visible text of the current page.", True),
        _a(
            "browser_find_text",
            "Find text on the current page and return the matching elements.",
            True,
            _p("text", "string", "Text to find"),
            required="text",
        ),
        _a(
            "browser_scroll",
            "Scroll the page up or down.",
            False,
            _p("direction", "enum:up|down", "Direction"),
            _p("amount", "integer", "Pixels to scroll"),
            required="direction",
        ),
        _a("browser_get_url", "Get the URL and title of the current page.", True),
        _a("browser_clear_cookies", "Clear every cookie of the browser context.", False),
        _a(
            "browser_set_geolocation",
            "Pretend the browser is at a geographic location.",
            False,
            _p("latitude", "integer", "Latitude"),
            _p("longitude", "integer", "Longitude"),
            required="latitude longitude",
        ),
        _a("browser_read_local_storage", "Read the page's local storage entries.", True),
    ),
)

DATA_PLATFORM = Domain(
    key="data_platform",
    label="Data platform",
    container="warehouse",
    context=(_p("project", "string", "Project or account"),),
    entities=(
        _e(
            "table",
            "tables",
            "list describe create delete export",
            _p("dataset", "string", "Dataset or schema name"),
            _NAME,
            _p("columns", "strings", "Column definitions"),
        ),
        _e("dataset", "datasets", "list get create delete", _NAME, _p("location", "enum:us|eu|asia", "Storage region")),
        _e(
            "query job",
            "query jobs",
            "list get cancel",
            _p("state", "enum:pending|running|done", "Job state"),
            _p("user", "string", "Who ran it"),
        ),
        _e("saved query", "saved queries", "list get create update delete", _NAME, _p("sql", "string", "SQL text")),
        _e("dashboard", "dashboards", "list get create update delete", _TITLE, _p("folder", "string", "Folder")),
        _e("pipeline", "pipelines", "list get start stop", _NAME, _p("schedule", "string", "Cron schedule")),
        _e("view", "views", "list describe create", _NAME, _p("sql", "string", "Defining query")),
        _e("notebook", "notebooks", "list get create", _TITLE),
    ),
    actions=(
        _a(
            "run_sql_query",
            "Run a SQL query against the warehouse and return the rows.",
            False,
            _p("sql", "string", "The SQL statement"),
            _p("max_rows", "integer", "Row limit"),
            _p("dry_run", "boolean", "Only validate and estimate cost"),
            required="sql",
        ),
        _a(
            "get_query_results",
            "Get the rows of a finished query job, one page at a time.",
            True,
            _p("job_id", "string", "Query job ID"),
            _p("page_token", "string", "Page token"),
            required="job_id",
        ),
        _a(
            "preview_table_rows",
            "Preview the first rows of a table without running a query.",
            True,
            _p("table", "string", "Fully qualified table name"),
            _p("rows", "integer", "How many rows"),
            required="table",
        ),
        _a(
            "explain_query",
            "Explain the execution plan of a SQL query.",
            True,
            _p("sql", "string", "The SQL statement"),
            required="sql",
        ),
        _a(
            "get_table_lineage",
            "Show upstream and downstream lineage of a table.",
            True,
            _p("table", "string", "Table name"),
            required="table",
        ),
        _a(
            "load_csv_into_table",
            "Load a CSV file from storage into a table.",
            False,
            _p("uri", "string", "Storage URI"),
            _p("table", "string", "Target table"),
            required="uri table",
        ),
    ),
)

CHAT = Domain(
    key="chat",
    label="Team chat",
    container="workspace",
    context=(),
    entities=(
        _e(
            "channel",
            "channels",
            "list get create archive rename invite",
            _NAME,
            _p("is_private", "boolean", "Create as a private channel"),
            _p("topic", "string", "Channel topic"),
        ),
        _e(
            "message",
            "messages",
            "list search send update delete pin",
            _p("channel", "string", "Channel ID"),
            _p("text", "string", "Message text"),
            _p("thread_ts", "string", "Thread to reply in"),
        ),
        _e("user", "users", "list get search", _NAME, _p("email", "string", "Email")),
        _e("reaction", "reactions", "list add remove", _p("emoji", "string", "Emoji name"), parent="message"),
        _e(
            "file",
            "files",
            "list get upload delete",
            _p("filename", "string", "File name"),
            _p("channel", "string", "Channel"),
        ),
        _e(
            "reminder",
            "reminders",
            "list create delete",
            _p("text", "string", "What to remind"),
            _p("time", "date", "When"),
        ),
        _e("user group", "user groups", "list create update", _NAME, _p("handle", "string", "Mention handle")),
    ),
    actions=(
        _a(
            "get_channel_history",
            "Get recent messages posted in a channel, newest first.",
            True,
            _p("channel", "string", "Channel ID"),
            _LIMIT,
            required="channel",
        ),
        _a(
            "get_thread_replies",
            "Get every reply in a message thread.",
            True,
            _p("channel", "string", "Channel ID"),
            _p("thread_ts", "string", "Thread timestamp"),
            required="channel thread_ts",
        ),
        _a(
            "set_status",
            "Set your status text and emoji.",
            False,
            _p("text", "string", "Status text"),
            _p("emoji", "string", "Status emoji"),
            required="text",
        ),
        _a(
            "get_user_presence",
            "Get whether a user is active or away.",
            True,
            _p("user", "string", "User ID"),
            required="user",
        ),
    ),
)

CLOUD = Domain(
    key="cloud",
    label="Cloud infrastructure",
    container="account",
    context=(_p("region", "string", "Cloud region, for example eu-west-1"),),
    entities=(
        _e(
            "instance",
            "instances",
            "list describe start stop restart delete create",
            _p("instance_type", "string", "Machine type"),
            _p("image", "string", "Image ID"),
            _p("state", "enum:running|stopped|terminated", "Instance state"),
        ),
        _e("bucket", "buckets", "list get create delete", _NAME, _p("versioning", "boolean", "Keep old versions")),
        _e(
            "object",
            "objects",
            "list get upload delete download",
            _p("bucket", "string", "Bucket name"),
            _p("key", "string", "Object key"),
            _p("prefix", "string", "Key prefix"),
        ),
        _e(
            "function",
            "functions",
            "list get create update delete",
            _NAME,
            _p("runtime", "enum:python3.12|nodejs22|go1.x", "Runtime"),
            _p("memory_mb", "integer", "Memory in MB"),
        ),
        _e(
            "security group",
            "security groups",
            "list describe create delete",
            _NAME,
            _p("ingress", "strings", "Ingress rules"),
        ),
        _e(
            "database instance",
            "database instances",
            "list describe create delete restart",
            _p("engine", "enum:postgres|mysql|aurora", "Database engine"),
            _p("size_gb", "integer", "Storage in GB"),
        ),
        _e("load balancer", "load balancers", "list describe create delete", _NAME),
        _e(
            "DNS record",
            "DNS records",
            "list create update delete",
            _p("zone", "string", "Hosted zone"),
            _p("type", "enum:A|AAAA|CNAME|TXT|MX", "Record type"),
            _p("value", "string", "Record value"),
        ),
        _e("secret", "secrets", "list get create update delete", _NAME, _p("value", "string", "Secret value")),
        _e("cost report", "cost reports", "list get export", _p("month", "string", "Month as YYYY-MM")),
    ),
    actions=(
        _a(
            "invoke_function",
            "Invoke a serverless function with a JSON payload and return its response.",
            False,
            _p("function_name", "string", "Function name"),
            _p("payload", "string", "JSON payload"),
            required="function_name",
        ),
        _a(
            "get_function_logs",
            "Read recent log lines of a serverless function.",
            True,
            _p("function_name", "string", "Function name"),
            _SINCE,
            required="function_name",
        ),
        _a("get_billing_summary", "Summarize this month's cloud spend by service.", True),
    ),
)

DOCS = Domain(
    key="docs",
    label="Documents and wiki",
    container="space",
    context=(),
    entities=(
        _e(
            "page",
            "pages",
            "list get search create update delete move archive publish",
            _TITLE,
            _p("content", "string", "Markdown content"),
            _p("parent_id", "string", "Parent page"),
        ),
        _e("database", "databases", "list get create", _TITLE, _p("properties", "strings", "Property names")),
        _e("block", "blocks", "get update delete", _p("content", "string", "Block text")),
        _e("page comment", "page comments", "list get_all create resolve", _BODY, parent="page"),
        _e("space", "spaces", "list get create", _NAME, _p("key", "string", "Space key")),
        _e("template", "templates", "list get", _NAME),
        _e(
            "attachment",
            "attachments",
            "list get_all upload download delete",
            _p("filename", "string", "File name"),
            parent="page",
        ),
    ),
    actions=(
        _a(
            "query_database",
            "Query a database with filters and sorts and return matching entries.",
            True,
            _p("database_id", "string", "Database ID"),
            _p("filter", "string", "Filter expression"),
            _LIMIT,
            required="database_id",
        ),
        _a(
            "append_block_children",
            "Append content blocks to the end of a page.",
            False,
            _p("page_id", "string", "Page ID"),
            _p("content", "string", "Markdown to append"),
            required="page_id content",
        ),
        _a(
            "get_page_history",
            "Get the edit history of a page.",
            True,
            _p("page_id", "string", "Page ID"),
            required="page_id",
        ),
    ),
)

CALENDAR = Domain(
    key="calendar",
    label="Calendar",
    container="calendar",
    context=(_p("calendar_id", "string", "Calendar ID; use primary for your own"),),
    entities=(
        _e(
            "event",
            "events",
            "list get search create update delete",
            _TITLE,
            _p("start", "date", "Start time (ISO 8601)"),
            _p("end", "date", "End time (ISO 8601)"),
            _p("attendees", "strings", "Attendee emails"),
            _p("location", "string", "Where"),
        ),
        _e("calendar", "calendars", "list get create delete", _NAME, _p("time_zone", "string", "IANA time zone")),
        _e("reminder", "reminders", "list create delete", _p("minutes_before", "integer", "Minutes before the event")),
        _e("room", "rooms", "list get", _p("capacity", "integer", "Minimum capacity")),
    ),
    actions=(
        _a(
            "find_free_slots",
            "Find time slots when every attendee is free.",
            True,
            _p("attendees", "strings", "Attendee emails"),
            _p("duration_minutes", "integer", "Meeting length"),
            _p("within_days", "integer", "Search window in days"),
            required="attendees duration_minutes",
        ),
        _a(
            "respond_to_invitation",
            "Accept, decline or tentatively accept a meeting invitation.",
            False,
            _p("event_id", "string", "Event ID"),
            _p("response", "enum:accepted|declined|tentative", "Your answer"),
            required="event_id response",
        ),
        _a(
            "get_free_busy",
            "Get busy intervals of people over a time range.",
            True,
            _p("emails", "strings", "People to check"),
            _p("start", "date", "From"),
            _p("end", "date", "To"),
            required="emails start end",
        ),
        _a(
            "quick_add_event",
            "Create an event from a plain-language sentence.",
            False,
            _p("text", "string", "For example: lunch with Ana tomorrow at noon"),
            required="text",
        ),
    ),
)

CRM = Domain(
    key="crm",
    label="CRM",
    container="CRM",
    context=(),
    entities=(
        _e(
            "contact",
            "contacts",
            "list get search create update delete",
            _p("first_name", "string", "First name"),
            _p("last_name", "string", "Last name"),
            _p("email", "string", "Email"),
            _p("company", "string", "Company"),
        ),
        _e(
            "company",
            "companies",
            "list get search create update",
            _NAME,
            _p("domain", "string", "Web domain"),
            _p("industry", "string", "Industry"),
        ),
        _e(
            "deal",
            "deals",
            "list get search create update delete",
            _NAME,
            _p("amount", "integer", "Deal value"),
            _p("stage", "enum:lead|qualified|proposal|won|lost", "Pipeline stage"),
        ),
        _e("note", "notes", "list create delete", _BODY, _p("contact_id", "string", "Contact")),
        _e("task", "tasks", "list create update", _TITLE, _p("due", "date", "Due date")),
        _e("activity", "activities", "list", _p("type", "enum:call|email|meeting", "Activity type")),
        _e("pipeline", "pipelines", "list get", _NAME),
        _e("quote", "quotes", "list get create send", _p("deal_id", "string", "Deal"), _p("total", "integer", "Total")),
    ),
    actions=(
        _a(
            "log_call",
            "Log a phone call with a contact.",
            False,
            _p("contact_id", "string", "Contact"),
            _p("summary", "string", "What was said"),
            required="contact_id summary",
        ),
        _a(
            "update_deal_stage",
            "Move a deal to another pipeline stage.",
            False,
            _p("deal_id", "string", "Deal ID"),
            _p("stage", "enum:lead|qualified|proposal|won|lost", "New stage"),
            required="deal_id stage",
        ),
        _a("get_sales_forecast", "Forecast revenue for the quarter from open deals.", True),
    ),
)

MONITORING = Domain(
    key="monitoring",
    label="Monitoring and observability",
    container="organization",
    context=(),
    entities=(
        _e(
            "alert",
            "alerts",
            "list get acknowledge resolve mute",
            _p("severity", "enum:critical|warning|info", "Severity"),
            _p("service", "string", "Service name"),
        ),
        _e(
            "incident",
            "incidents",
            "list get create update acknowledge resolve",
            _TITLE,
            _p("severity", "enum:sev1|sev2|sev3", "Severity"),
            _p("commander", "string", "Incident commander"),
        ),
        _e(
            "monitor",
            "monitors",
            "list get create update delete mute",
            _NAME,
            _p("query", "string", "Metric query"),
            _p("threshold", "integer", "Alert threshold"),
        ),
        _e("dashboard", "dashboards", "list get create delete", _TITLE),
        _e("service", "services", "list get", _NAME, _p("team", "string", "Owning team")),
        _e(
            "trace",
            "traces",
            "get search",
            _p("service", "string", "Service"),
            _p("min_duration_ms", "integer", "Slowest first"),
        ),
        _e("on-call schedule", "on-call schedules", "list get", _NAME),
        _e("SLO", "SLOs", "list get create", _NAME, _p("target", "integer", "Target percentage")),
    ),
    actions=(
        _a(
            "query_logs",
            "Query logs with a search expression over a time range.",
            True,
            _p("query", "string", "Log search expression"),
            _SINCE,
            _LIMIT,
            required="query",
        ),
        _a(
            "query_metrics",
            "Query a metric time series and return data points.",
            True,
            _p("query", "string", "Metric query"),
            _p("from", "date", "Start"),
            _p("to", "date", "End"),
            required="query",
        ),
        _a(
            "get_current_on_call",
            "Get who is on call now for a schedule.",
            True,
            _p("schedule_id", "string", "Schedule"),
            required="schedule_id",
        ),
        _a(
            "page_on_call",
            "Page the on-call engineer with a message.",
            False,
            _p("schedule_id", "string", "Schedule"),
            _p("message", "string", "Message"),
            required="schedule_id message",
        ),
    ),
)

DOMAINS: dict[str, Domain] = {
    d.key: d
    for d in (CODE_HOSTING, ISSUE_TRACKER, BROWSER, DATA_PLATFORM, CHAT, CLOUD, DOCS, CALENDAR, CRM, MONITORING)
}
