/**
 * The lexical ranker (SPEC.md RNK-1 to RNK-8): a score per tool from the user message (or,
 * in discovery, the agent's query) and the system prompt, and one global order by score,
 * then qualified name.
 */
import type { CatalogTool } from "./catalog.js";
import { casefold, compareCodePoints, occursAsWord, triggerFires, words } from "./text.js";

const USER_WORD = 12;
const SYSTEM_WORD = 2;
const USER_SERVER_ID = 16;
const SYSTEM_SERVER_ID = 3;
const READ_ONLY = 3;
const ALIAS = 12;
const READ_TOOL = 8;
const WRITE_TOOL = -32;

/** Trigger -> the substring of tool names it points at (RNK-5). */
const ALIASES: readonly (readonly [string, string])[] = [
  ["pr", "pull_request"],
  ["合并请求", "pull_request"],
  ["工单", "issue"],
  ["评审", "review"],
  ["日志", "log"],
];
const READ_SIGNALS = ["查询", "列出", "最近", "查看", "summary", "review", "list", "show", "find", "search", "recent"];
const READ_VERBS = new Set(["list", "search", "get", "read", "find", "view", "download"]);
const WRITE_VERBS = new Set(["create", "update", "delete", "push", "send", "write", "remove", "edit", "merge"]);

export interface Score {
  readonly total: number;
  /** A word hit, an alias or the server id from the user message or query (DSC-10). */
  readonly relevant: boolean;
}

/** What a ranker needs of a tool, computed once per tool and run. */
interface ToolText {
  readonly words: ReadonlySet<string>;
  readonly nameWords: ReadonlySet<string>;
  readonly foldedName: string;
  readonly foldedServerId: string;
  readonly readOnly: boolean;
}

export interface Ranker {
  /** The tools in ranking order: score descending, then qualified name. */
  rank(tools: readonly CatalogTool[], userMessage: string): RankedTool[];
}

export interface RankedTool {
  readonly tool: CatalogTool;
  readonly score: Score;
}

export class LexicalRanker implements Ranker {
  private readonly systemPrompt: string;
  private readonly systemWords: ReadonlySet<string>;
  private readonly texts = new WeakMap<CatalogTool, ToolText>();

  constructor(systemPrompt: string) {
    this.systemPrompt = casefold(systemPrompt);
    this.systemWords = words(systemPrompt);
  }

  rank(tools: readonly CatalogTool[], userMessage: string): RankedTool[] {
    const message = new Message(userMessage);
    return tools
      .map((tool) => ({ tool, score: this.score(this.text(tool), message) }))
      .sort((a, b) => b.score.total - a.score.total || compareCodePoints(a.tool.qualifiedName, b.tool.qualifiedName));
  }

  private score(tool: ToolText, message: Message): Score {
    let total = 0;
    let userHits = 0;
    for (const word of tool.words) {
      if (message.words.has(word)) userHits += 1;
      if (this.systemWords.has(word)) total += SYSTEM_WORD;
    }
    total += USER_WORD * userHits;
    const named = occursAsWord(message.text, tool.foldedServerId);
    if (named) total += USER_SERVER_ID;
    if (occursAsWord(this.systemPrompt, tool.foldedServerId)) total += SYSTEM_SERVER_ID;
    if (tool.readOnly) total += READ_ONLY;
    const aliases = message.aliasTargets.filter((target) => tool.foldedName.includes(target)).length;
    total += ALIAS * aliases;
    if (message.readIntent) {
      if ([...tool.nameWords].some((word) => READ_VERBS.has(word))) total += READ_TOOL;
      if ([...tool.nameWords].some((word) => WRITE_VERBS.has(word))) total += WRITE_TOOL;
    }
    return { total, relevant: userHits > 0 || aliases > 0 || named };
  }

  private text(tool: CatalogTool): ToolText {
    let text = this.texts.get(tool);
    if (text === undefined) {
      const nameWords = words(tool.originalName);
      text = {
        words: new Set([...nameWords, ...words(tool.description)]),
        nameWords,
        foldedName: casefold(tool.originalName),
        foldedServerId: casefold(tool.server.id),
        readOnly: tool.annotations?.["readOnlyHint"] === true,
      };
      this.texts.set(tool, text);
    }
    return text;
  }
}

/** The user message (or discovery query) with its triggers looked up once (RNK-7). */
class Message {
  readonly text: string;
  readonly words: ReadonlySet<string>;
  /** One target per alias that fires, so two aliases of one target count twice. */
  readonly aliasTargets: readonly string[];
  readonly readIntent: boolean;

  constructor(raw: string) {
    this.text = casefold(raw);
    this.words = words(raw);
    this.aliasTargets = ALIASES.filter(([trigger]) => triggerFires(this.text, trigger)).map(([, target]) => target);
    this.readIntent = READ_SIGNALS.some((signal) => triggerFires(this.text, signal));
  }
}
