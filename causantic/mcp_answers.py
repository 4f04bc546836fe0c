"""The MCP server's fixed answers, recorded from the SDK server: python -m causantic.mcp_front --record.

Generated; do not edit. See causantic/mcp_front.py.
"""

ANSWERS_JSON = r'''{
 "initialize 2024-11-05": {
  "capabilities": {
   "prompts": {
    "listChanged": false
   },
   "resources": {
    "listChanged": false,
    "subscribe": false
   },
   "tools": {
    "listChanged": false
   }
  },
  "instructions": "Long-term memory of past Claude Code sessions on this machine (all projects), read from their transcripts. Pick the tool by the question: search = what do we know about X; recall = how did we solve or decide X (the story, in order); predict = what usually comes next after X; reconstruct = what happened recently, in session S or in the session where X. Results quote past sessions and may be stale: check them against the code before relying on them.",
  "protocolVersion": "2024-11-05",
  "serverInfo": {
   "name": "causantic",
   "version": "0.1.0"
  }
 },
 "initialize 2025-03-26": {
  "capabilities": {
   "prompts": {
    "listChanged": false
   },
   "resources": {
    "listChanged": false,
    "subscribe": false
   },
   "tools": {
    "listChanged": false
   }
  },
  "instructions": "Long-term memory of past Claude Code sessions on this machine (all projects), read from their transcripts. Pick the tool by the question: search = what do we know about X; recall = how did we solve or decide X (the story, in order); predict = what usually comes next after X; reconstruct = what happened recently, in session S or in the session where X. Results quote past sessions and may be stale: check them against the code before relying on them.",
  "protocolVersion": "2025-03-26",
  "serverInfo": {
   "name": "causantic",
   "version": "0.1.0"
  }
 },
 "initialize 2025-06-18": {
  "capabilities": {
   "prompts": {
    "listChanged": false
   },
   "resources": {
    "listChanged": false,
    "subscribe": false
   },
   "tools": {
    "listChanged": false
   }
  },
  "instructions": "Long-term memory of past Claude Code sessions on this machine (all projects), read from their transcripts. Pick the tool by the question: search = what do we know about X; recall = how did we solve or decide X (the story, in order); predict = what usually comes next after X; reconstruct = what happened recently, in session S or in the session where X. Results quote past sessions and may be stale: check them against the code before relying on them.",
  "protocolVersion": "2025-06-18",
  "serverInfo": {
   "name": "causantic",
   "version": "0.1.0"
  }
 },
 "initialize 2025-11-25": {
  "capabilities": {
   "prompts": {
    "listChanged": false
   },
   "resources": {
    "listChanged": false,
    "subscribe": false
   },
   "tools": {
    "listChanged": false
   }
  },
  "instructions": "Long-term memory of past Claude Code sessions on this machine (all projects), read from their transcripts. Pick the tool by the question: search = what do we know about X; recall = how did we solve or decide X (the story, in order); predict = what usually comes next after X; reconstruct = what happened recently, in session S or in the session where X. Results quote past sessions and may be stale: check them against the code before relying on them.",
  "protocolVersion": "2025-11-25",
  "serverInfo": {
   "name": "causantic",
   "version": "0.1.0"
  }
 },
 "ping 2024-11-05": {},
 "ping 2025-03-26": {},
 "ping 2025-06-18": {},
 "ping 2025-11-25": {},
 "prompts/list 2024-11-05": {
  "prompts": []
 },
 "prompts/list 2025-03-26": {
  "prompts": []
 },
 "prompts/list 2025-06-18": {
  "prompts": []
 },
 "prompts/list 2025-11-25": {
  "prompts": []
 },
 "prompts/list 2026-07-28": {
  "_meta": {
   "io.modelcontextprotocol/serverInfo": {
    "name": "causantic",
    "version": "0.1.0"
   }
  },
  "cacheScope": "private",
  "prompts": [],
  "resultType": "complete",
  "ttlMs": 0
 },
 "resources/list 2024-11-05": {
  "resources": []
 },
 "resources/list 2025-03-26": {
  "resources": []
 },
 "resources/list 2025-06-18": {
  "resources": []
 },
 "resources/list 2025-11-25": {
  "resources": []
 },
 "resources/list 2026-07-28": {
  "_meta": {
   "io.modelcontextprotocol/serverInfo": {
    "name": "causantic",
    "version": "0.1.0"
   }
  },
  "cacheScope": "private",
  "resources": [],
  "resultType": "complete",
  "ttlMs": 0
 },
 "server/discover 2026-07-28": {
  "_meta": {
   "io.modelcontextprotocol/serverInfo": {
    "name": "causantic",
    "version": "0.1.0"
   }
  },
  "cacheScope": "private",
  "capabilities": {
   "prompts": {
    "listChanged": true
   },
   "resources": {
    "listChanged": true,
    "subscribe": true
   },
   "tools": {
    "listChanged": true
   }
  },
  "instructions": "Long-term memory of past Claude Code sessions on this machine (all projects), read from their transcripts. Pick the tool by the question: search = what do we know about X; recall = how did we solve or decide X (the story, in order); predict = what usually comes next after X; reconstruct = what happened recently, in session S or in the session where X. Results quote past sessions and may be stale: check them against the code before relying on them.",
  "resultType": "complete",
  "supportedVersions": [
   "2026-07-28"
  ],
  "ttlMs": 0
 },
 "subscriptions/listen 2026-07-28 {\"promptsListChanged\": true, \"resourcesListChanged\": true, \"toolsListChanged\": true}": {
  "_meta": {},
  "notifications": {
   "promptsListChanged": true,
   "resourcesListChanged": true,
   "toolsListChanged": true
  }
 },
 "tools/list 2024-11-05": {
  "tools": [
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What do we know about X: past discussion, errors, decisions, files, commands, ranked by relevance. Not for \"what happened last/recently\" (use reconstruct) or \"how did we get to X\" (use recall).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "hybrid",
       "description": "hybrid (default) = keywords + meaning; keyword = exact terms.",
       "enum": [
        "hybrid",
        "keyword",
        "vector"
       ],
       "title": "Mode",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "Words, identifiers, error text.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "searchArguments",
     "type": "object"
    },
    "name": "search"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "How did we solve or decide X: walks the causal chain backwards from the best match and tells the episode in order (problem, attempts, fix). Not for recency questions (use reconstruct).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "The fix, decision or result to explain.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "recallArguments",
     "type": "object"
    },
    "name": "recall"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What usually comes next: walks the causal chain forwards from similar past moments (follow-up steps, later errors, what was done after). Use before a familiar multi-step task.",
    "inputSchema": {
     "properties": {
      "context": {
       "description": "The current task, error or step.",
       "minLength": 1,
       "title": "Context",
       "type": "string"
      },
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "required": [
      "context"
     ],
     "title": "predictArguments",
     "type": "object"
    },
    "name": "predict"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What happened recently or in session S, in time order: the tool for \"what did we do last time / yesterday / in that session\". mode=briefing gives the last session's state (this worktree's when it has one; branch, last request, open todos, errors, files) and its final steps, for resuming work. With query: what happened in the session where X.",
    "inputSchema": {
     "properties": {
      "current_session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The session you are in, to leave it out.",
       "title": "Current Session Id"
      },
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only the last N days.",
       "title": "Days Back"
      },
      "end": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Up to this ISO date/time (a date: that whole day).",
       "title": "End"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "timeline",
       "description": "timeline = chunks in time order; briefing = state + last steps.",
       "enum": [
        "timeline",
        "briefing"
       ],
       "title": "Mode",
       "type": "string"
      },
      "previous_session": {
       "default": false,
       "description": "The session before the newest (or before current_session_id).",
       "title": "Previous Session",
       "type": "boolean"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: session_id's project, else the one Claude Code runs in (for a query, any project when memory holds nothing of that one).",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "A question about a session (\"what came out of the session where we ...\"): answers it from the session of the best match (or session_id): how it started, the matching turns, how it ended, and (when it chose the session) other sessions' matches in the budget left. mode does not apply.",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "This session: full id or its first 8+ characters.",
       "title": "Session Id"
      },
      "start": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "From this ISO date/time.",
       "title": "Start"
      }
     },
     "title": "reconstructArguments",
     "type": "object"
    },
    "name": "reconstruct"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The projects in memory with session and chunk counts and time spans; use the names as `project` in other tools.",
    "inputSchema": {
     "properties": {},
     "title": "list_projectsArguments",
     "type": "object"
    },
    "name": "list-projects"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "A project's sessions, newest first, with ids, times, sizes and titles; use an id with reconstruct.",
    "inputSchema": {
     "properties": {
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only sessions active in the last N days.",
       "title": "Days Back"
      },
      "limit": {
       "default": 30,
       "description": "Most sessions to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: the project Claude Code runs in.",
       "title": "Project"
      }
     },
     "title": "list_sessionsArguments",
     "type": "object"
    },
    "name": "list-sessions"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "Counts of what memory holds: projects, sessions, chunks, edges, vectors, topics.",
    "inputSchema": {
     "properties": {
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "title": "statsArguments",
     "type": "object"
    },
    "name": "stats"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The topic map of memory: groups of similar past work, each named by its distinctive terms, with size, time span and projects, largest first; with topic_id, that topic's chunks in time order. For an overview of what past work covered.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most topics (or chunks) to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "topic_id": {
       "anyOf": [
        {
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Show this topic's chunks (ids from the list).",
       "title": "Topic Id"
      }
     },
     "title": "topicsArguments",
     "type": "object"
    },
    "name": "topics"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": true,
     "idempotentHint": true,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Delete memory by project, session, time range and/or query, e.g. when the user asks to forget something. Previews by default; deletes only with dry_run=false, and leaves tombstones so a re-ingest does not bring it back. Show the preview to the user before deleting.",
    "inputSchema": {
     "properties": {
      "after": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks from this ISO date/time on, e.g. 2026-01-31.",
       "title": "After"
      },
      "before": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks before this ISO date/time.",
       "title": "Before"
      },
      "dry_run": {
       "default": true,
       "description": "true (default) only previews; false deletes for good.",
       "title": "Dry Run",
       "type": "boolean"
      },
      "memory_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Forget this remembered observation (id from search/memories) instead.",
       "title": "Memory Id"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks similar to this text (see threshold).",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this session (full id).",
       "title": "Session Id"
      },
      "threshold": {
       "default": 0.6,
       "description": "Similarity needed with a query, 0-1.",
       "exclusiveMinimum": 0,
       "maximum": 1,
       "title": "Threshold",
       "type": "number"
      }
     },
     "title": "forgetArguments",
     "type": "object"
    },
    "name": "forget"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "When each causantic hook (session start briefing, background ingest at compaction and session end) last ran and whether it failed. For diagnosing missing memory.",
    "inputSchema": {
     "properties": {},
     "title": "hook_statusArguments",
     "type": "object"
    },
    "name": "hook-status"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Remember something for future sessions: a user's standing instruction (\"always use pnpm\"), a decision and its reason, a hard-won fix, or an insight/procedure you drew after `reflect`. Stored locally, shown in session briefings and in search results. An exact repeat is counted, not duplicated.",
    "inputSchema": {
     "properties": {
      "cites": {
       "anyOf": [
        {
         "items": {
          "type": "string"
         },
         "type": "array"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Chunk ids the statement rests on (from search/reflect).",
       "title": "Cites"
      },
      "content": {
       "description": "One self-contained statement to remember.",
       "maxLength": 4000,
       "minLength": 1,
       "title": "Content",
       "type": "string"
      },
      "importance": {
       "anyOf": [
        {
         "maximum": 10,
         "minimum": 1,
         "type": "number"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Override the type's default importance (instruction 10 ... tool_output 3).",
       "title": "Importance"
      },
      "observation_type": {
       "default": "general",
       "description": "instruction (a standing rule from the user), decision, error (and its fix), insight / procedure (your synthesis after reflect), code_change, test_result, general, tool_output",
       "enum": [
        "instruction",
        "error",
        "decision",
        "code_change",
        "insight",
        "procedure",
        "test_result",
        "general",
        "tool_output"
       ],
       "title": "Observation Type",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The project it applies to: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for every project.",
       "title": "Project"
      }
     },
     "required": [
      "content"
     ],
     "title": "observeArguments",
     "type": "object"
    },
    "name": "observe"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "List remembered observations (instructions, decisions, fixes, insights), most important first, with ids for feedback and forget.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most memories to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "observation_type": {
       "anyOf": [
        {
         "enum": [
          "instruction",
          "error",
          "decision",
          "code_change",
          "insight",
          "procedure",
          "test_result",
          "general",
          "tool_output"
         ],
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this type.",
       "title": "Observation Type"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project (plus global ones): a name, worktree folder name or path.",
       "title": "Project"
      }
     },
     "title": "memoriesArguments",
     "type": "object"
    },
    "name": "memories"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Tell memory whether a remembered observation helped (raises its importance) or was wrong/outdated (lowers it). Effective importance = base + 0.5 x (helpful - harmful); it does not make the memory look recent.",
    "inputSchema": {
     "properties": {
      "helpful": {
       "description": "true if it helped, false if wrong or harmful.",
       "title": "Helpful",
       "type": "boolean"
      },
      "memory_id": {
       "description": "The memory's id (mem_...).",
       "minLength": 4,
       "title": "Memory Id",
       "type": "string"
      },
      "reason": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Why, in a few words.",
       "title": "Reason"
      }
     },
     "required": [
      "memory_id",
      "helpful"
     ],
     "title": "feedbackArguments",
     "type": "object"
    },
    "name": "feedback"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Reflect on a project's recent observations: returns guiding questions and evidence groups (topics, recent errors and fixes, repeated items). Answer them yourself and save each conclusion with observe(observation_type=\"insight\" or \"procedure\", cites=[chunk ids]). Use when the session briefing says reflection is due.",
    "inputSchema": {
     "properties": {
      "focus": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only observations about this.",
       "title": "Focus"
      },
      "project": {
       "description": "Project name (see list-projects), worktree folder name or path.",
       "minLength": 1,
       "title": "Project",
       "type": "string"
      }
     },
     "required": [
      "project"
     ],
     "title": "reflectArguments",
     "type": "object"
    },
    "name": "reflect"
   }
  ]
 },
 "tools/list 2025-03-26": {
  "tools": [
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What do we know about X: past discussion, errors, decisions, files, commands, ranked by relevance. Not for \"what happened last/recently\" (use reconstruct) or \"how did we get to X\" (use recall).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "hybrid",
       "description": "hybrid (default) = keywords + meaning; keyword = exact terms.",
       "enum": [
        "hybrid",
        "keyword",
        "vector"
       ],
       "title": "Mode",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "Words, identifiers, error text.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "searchArguments",
     "type": "object"
    },
    "name": "search"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "How did we solve or decide X: walks the causal chain backwards from the best match and tells the episode in order (problem, attempts, fix). Not for recency questions (use reconstruct).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "The fix, decision or result to explain.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "recallArguments",
     "type": "object"
    },
    "name": "recall"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What usually comes next: walks the causal chain forwards from similar past moments (follow-up steps, later errors, what was done after). Use before a familiar multi-step task.",
    "inputSchema": {
     "properties": {
      "context": {
       "description": "The current task, error or step.",
       "minLength": 1,
       "title": "Context",
       "type": "string"
      },
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "required": [
      "context"
     ],
     "title": "predictArguments",
     "type": "object"
    },
    "name": "predict"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What happened recently or in session S, in time order: the tool for \"what did we do last time / yesterday / in that session\". mode=briefing gives the last session's state (this worktree's when it has one; branch, last request, open todos, errors, files) and its final steps, for resuming work. With query: what happened in the session where X.",
    "inputSchema": {
     "properties": {
      "current_session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The session you are in, to leave it out.",
       "title": "Current Session Id"
      },
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only the last N days.",
       "title": "Days Back"
      },
      "end": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Up to this ISO date/time (a date: that whole day).",
       "title": "End"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "timeline",
       "description": "timeline = chunks in time order; briefing = state + last steps.",
       "enum": [
        "timeline",
        "briefing"
       ],
       "title": "Mode",
       "type": "string"
      },
      "previous_session": {
       "default": false,
       "description": "The session before the newest (or before current_session_id).",
       "title": "Previous Session",
       "type": "boolean"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: session_id's project, else the one Claude Code runs in (for a query, any project when memory holds nothing of that one).",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "A question about a session (\"what came out of the session where we ...\"): answers it from the session of the best match (or session_id): how it started, the matching turns, how it ended, and (when it chose the session) other sessions' matches in the budget left. mode does not apply.",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "This session: full id or its first 8+ characters.",
       "title": "Session Id"
      },
      "start": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "From this ISO date/time.",
       "title": "Start"
      }
     },
     "title": "reconstructArguments",
     "type": "object"
    },
    "name": "reconstruct"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The projects in memory with session and chunk counts and time spans; use the names as `project` in other tools.",
    "inputSchema": {
     "properties": {},
     "title": "list_projectsArguments",
     "type": "object"
    },
    "name": "list-projects"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "A project's sessions, newest first, with ids, times, sizes and titles; use an id with reconstruct.",
    "inputSchema": {
     "properties": {
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only sessions active in the last N days.",
       "title": "Days Back"
      },
      "limit": {
       "default": 30,
       "description": "Most sessions to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: the project Claude Code runs in.",
       "title": "Project"
      }
     },
     "title": "list_sessionsArguments",
     "type": "object"
    },
    "name": "list-sessions"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "Counts of what memory holds: projects, sessions, chunks, edges, vectors, topics.",
    "inputSchema": {
     "properties": {
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "title": "statsArguments",
     "type": "object"
    },
    "name": "stats"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The topic map of memory: groups of similar past work, each named by its distinctive terms, with size, time span and projects, largest first; with topic_id, that topic's chunks in time order. For an overview of what past work covered.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most topics (or chunks) to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "topic_id": {
       "anyOf": [
        {
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Show this topic's chunks (ids from the list).",
       "title": "Topic Id"
      }
     },
     "title": "topicsArguments",
     "type": "object"
    },
    "name": "topics"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": true,
     "idempotentHint": true,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Delete memory by project, session, time range and/or query, e.g. when the user asks to forget something. Previews by default; deletes only with dry_run=false, and leaves tombstones so a re-ingest does not bring it back. Show the preview to the user before deleting.",
    "inputSchema": {
     "properties": {
      "after": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks from this ISO date/time on, e.g. 2026-01-31.",
       "title": "After"
      },
      "before": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks before this ISO date/time.",
       "title": "Before"
      },
      "dry_run": {
       "default": true,
       "description": "true (default) only previews; false deletes for good.",
       "title": "Dry Run",
       "type": "boolean"
      },
      "memory_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Forget this remembered observation (id from search/memories) instead.",
       "title": "Memory Id"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks similar to this text (see threshold).",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this session (full id).",
       "title": "Session Id"
      },
      "threshold": {
       "default": 0.6,
       "description": "Similarity needed with a query, 0-1.",
       "exclusiveMinimum": 0,
       "maximum": 1,
       "title": "Threshold",
       "type": "number"
      }
     },
     "title": "forgetArguments",
     "type": "object"
    },
    "name": "forget"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "When each causantic hook (session start briefing, background ingest at compaction and session end) last ran and whether it failed. For diagnosing missing memory.",
    "inputSchema": {
     "properties": {},
     "title": "hook_statusArguments",
     "type": "object"
    },
    "name": "hook-status"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Remember something for future sessions: a user's standing instruction (\"always use pnpm\"), a decision and its reason, a hard-won fix, or an insight/procedure you drew after `reflect`. Stored locally, shown in session briefings and in search results. An exact repeat is counted, not duplicated.",
    "inputSchema": {
     "properties": {
      "cites": {
       "anyOf": [
        {
         "items": {
          "type": "string"
         },
         "type": "array"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Chunk ids the statement rests on (from search/reflect).",
       "title": "Cites"
      },
      "content": {
       "description": "One self-contained statement to remember.",
       "maxLength": 4000,
       "minLength": 1,
       "title": "Content",
       "type": "string"
      },
      "importance": {
       "anyOf": [
        {
         "maximum": 10,
         "minimum": 1,
         "type": "number"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Override the type's default importance (instruction 10 ... tool_output 3).",
       "title": "Importance"
      },
      "observation_type": {
       "default": "general",
       "description": "instruction (a standing rule from the user), decision, error (and its fix), insight / procedure (your synthesis after reflect), code_change, test_result, general, tool_output",
       "enum": [
        "instruction",
        "error",
        "decision",
        "code_change",
        "insight",
        "procedure",
        "test_result",
        "general",
        "tool_output"
       ],
       "title": "Observation Type",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The project it applies to: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for every project.",
       "title": "Project"
      }
     },
     "required": [
      "content"
     ],
     "title": "observeArguments",
     "type": "object"
    },
    "name": "observe"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "List remembered observations (instructions, decisions, fixes, insights), most important first, with ids for feedback and forget.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most memories to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "observation_type": {
       "anyOf": [
        {
         "enum": [
          "instruction",
          "error",
          "decision",
          "code_change",
          "insight",
          "procedure",
          "test_result",
          "general",
          "tool_output"
         ],
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this type.",
       "title": "Observation Type"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project (plus global ones): a name, worktree folder name or path.",
       "title": "Project"
      }
     },
     "title": "memoriesArguments",
     "type": "object"
    },
    "name": "memories"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Tell memory whether a remembered observation helped (raises its importance) or was wrong/outdated (lowers it). Effective importance = base + 0.5 x (helpful - harmful); it does not make the memory look recent.",
    "inputSchema": {
     "properties": {
      "helpful": {
       "description": "true if it helped, false if wrong or harmful.",
       "title": "Helpful",
       "type": "boolean"
      },
      "memory_id": {
       "description": "The memory's id (mem_...).",
       "minLength": 4,
       "title": "Memory Id",
       "type": "string"
      },
      "reason": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Why, in a few words.",
       "title": "Reason"
      }
     },
     "required": [
      "memory_id",
      "helpful"
     ],
     "title": "feedbackArguments",
     "type": "object"
    },
    "name": "feedback"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Reflect on a project's recent observations: returns guiding questions and evidence groups (topics, recent errors and fixes, repeated items). Answer them yourself and save each conclusion with observe(observation_type=\"insight\" or \"procedure\", cites=[chunk ids]). Use when the session briefing says reflection is due.",
    "inputSchema": {
     "properties": {
      "focus": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only observations about this.",
       "title": "Focus"
      },
      "project": {
       "description": "Project name (see list-projects), worktree folder name or path.",
       "minLength": 1,
       "title": "Project",
       "type": "string"
      }
     },
     "required": [
      "project"
     ],
     "title": "reflectArguments",
     "type": "object"
    },
    "name": "reflect"
   }
  ]
 },
 "tools/list 2025-06-18": {
  "tools": [
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What do we know about X: past discussion, errors, decisions, files, commands, ranked by relevance. Not for \"what happened last/recently\" (use reconstruct) or \"how did we get to X\" (use recall).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "hybrid",
       "description": "hybrid (default) = keywords + meaning; keyword = exact terms.",
       "enum": [
        "hybrid",
        "keyword",
        "vector"
       ],
       "title": "Mode",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "Words, identifiers, error text.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "searchArguments",
     "type": "object"
    },
    "name": "search"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "How did we solve or decide X: walks the causal chain backwards from the best match and tells the episode in order (problem, attempts, fix). Not for recency questions (use reconstruct).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "The fix, decision or result to explain.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "recallArguments",
     "type": "object"
    },
    "name": "recall"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What usually comes next: walks the causal chain forwards from similar past moments (follow-up steps, later errors, what was done after). Use before a familiar multi-step task.",
    "inputSchema": {
     "properties": {
      "context": {
       "description": "The current task, error or step.",
       "minLength": 1,
       "title": "Context",
       "type": "string"
      },
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "required": [
      "context"
     ],
     "title": "predictArguments",
     "type": "object"
    },
    "name": "predict"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What happened recently or in session S, in time order: the tool for \"what did we do last time / yesterday / in that session\". mode=briefing gives the last session's state (this worktree's when it has one; branch, last request, open todos, errors, files) and its final steps, for resuming work. With query: what happened in the session where X.",
    "inputSchema": {
     "properties": {
      "current_session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The session you are in, to leave it out.",
       "title": "Current Session Id"
      },
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only the last N days.",
       "title": "Days Back"
      },
      "end": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Up to this ISO date/time (a date: that whole day).",
       "title": "End"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "timeline",
       "description": "timeline = chunks in time order; briefing = state + last steps.",
       "enum": [
        "timeline",
        "briefing"
       ],
       "title": "Mode",
       "type": "string"
      },
      "previous_session": {
       "default": false,
       "description": "The session before the newest (or before current_session_id).",
       "title": "Previous Session",
       "type": "boolean"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: session_id's project, else the one Claude Code runs in (for a query, any project when memory holds nothing of that one).",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "A question about a session (\"what came out of the session where we ...\"): answers it from the session of the best match (or session_id): how it started, the matching turns, how it ended, and (when it chose the session) other sessions' matches in the budget left. mode does not apply.",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "This session: full id or its first 8+ characters.",
       "title": "Session Id"
      },
      "start": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "From this ISO date/time.",
       "title": "Start"
      }
     },
     "title": "reconstructArguments",
     "type": "object"
    },
    "name": "reconstruct"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The projects in memory with session and chunk counts and time spans; use the names as `project` in other tools.",
    "inputSchema": {
     "properties": {},
     "title": "list_projectsArguments",
     "type": "object"
    },
    "name": "list-projects"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "A project's sessions, newest first, with ids, times, sizes and titles; use an id with reconstruct.",
    "inputSchema": {
     "properties": {
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only sessions active in the last N days.",
       "title": "Days Back"
      },
      "limit": {
       "default": 30,
       "description": "Most sessions to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: the project Claude Code runs in.",
       "title": "Project"
      }
     },
     "title": "list_sessionsArguments",
     "type": "object"
    },
    "name": "list-sessions"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "Counts of what memory holds: projects, sessions, chunks, edges, vectors, topics.",
    "inputSchema": {
     "properties": {
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "title": "statsArguments",
     "type": "object"
    },
    "name": "stats"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The topic map of memory: groups of similar past work, each named by its distinctive terms, with size, time span and projects, largest first; with topic_id, that topic's chunks in time order. For an overview of what past work covered.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most topics (or chunks) to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "topic_id": {
       "anyOf": [
        {
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Show this topic's chunks (ids from the list).",
       "title": "Topic Id"
      }
     },
     "title": "topicsArguments",
     "type": "object"
    },
    "name": "topics"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": true,
     "idempotentHint": true,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Delete memory by project, session, time range and/or query, e.g. when the user asks to forget something. Previews by default; deletes only with dry_run=false, and leaves tombstones so a re-ingest does not bring it back. Show the preview to the user before deleting.",
    "inputSchema": {
     "properties": {
      "after": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks from this ISO date/time on, e.g. 2026-01-31.",
       "title": "After"
      },
      "before": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks before this ISO date/time.",
       "title": "Before"
      },
      "dry_run": {
       "default": true,
       "description": "true (default) only previews; false deletes for good.",
       "title": "Dry Run",
       "type": "boolean"
      },
      "memory_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Forget this remembered observation (id from search/memories) instead.",
       "title": "Memory Id"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks similar to this text (see threshold).",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this session (full id).",
       "title": "Session Id"
      },
      "threshold": {
       "default": 0.6,
       "description": "Similarity needed with a query, 0-1.",
       "exclusiveMinimum": 0,
       "maximum": 1,
       "title": "Threshold",
       "type": "number"
      }
     },
     "title": "forgetArguments",
     "type": "object"
    },
    "name": "forget"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "When each causantic hook (session start briefing, background ingest at compaction and session end) last ran and whether it failed. For diagnosing missing memory.",
    "inputSchema": {
     "properties": {},
     "title": "hook_statusArguments",
     "type": "object"
    },
    "name": "hook-status"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Remember something for future sessions: a user's standing instruction (\"always use pnpm\"), a decision and its reason, a hard-won fix, or an insight/procedure you drew after `reflect`. Stored locally, shown in session briefings and in search results. An exact repeat is counted, not duplicated.",
    "inputSchema": {
     "properties": {
      "cites": {
       "anyOf": [
        {
         "items": {
          "type": "string"
         },
         "type": "array"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Chunk ids the statement rests on (from search/reflect).",
       "title": "Cites"
      },
      "content": {
       "description": "One self-contained statement to remember.",
       "maxLength": 4000,
       "minLength": 1,
       "title": "Content",
       "type": "string"
      },
      "importance": {
       "anyOf": [
        {
         "maximum": 10,
         "minimum": 1,
         "type": "number"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Override the type's default importance (instruction 10 ... tool_output 3).",
       "title": "Importance"
      },
      "observation_type": {
       "default": "general",
       "description": "instruction (a standing rule from the user), decision, error (and its fix), insight / procedure (your synthesis after reflect), code_change, test_result, general, tool_output",
       "enum": [
        "instruction",
        "error",
        "decision",
        "code_change",
        "insight",
        "procedure",
        "test_result",
        "general",
        "tool_output"
       ],
       "title": "Observation Type",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The project it applies to: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for every project.",
       "title": "Project"
      }
     },
     "required": [
      "content"
     ],
     "title": "observeArguments",
     "type": "object"
    },
    "name": "observe"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "List remembered observations (instructions, decisions, fixes, insights), most important first, with ids for feedback and forget.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most memories to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "observation_type": {
       "anyOf": [
        {
         "enum": [
          "instruction",
          "error",
          "decision",
          "code_change",
          "insight",
          "procedure",
          "test_result",
          "general",
          "tool_output"
         ],
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this type.",
       "title": "Observation Type"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project (plus global ones): a name, worktree folder name or path.",
       "title": "Project"
      }
     },
     "title": "memoriesArguments",
     "type": "object"
    },
    "name": "memories"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Tell memory whether a remembered observation helped (raises its importance) or was wrong/outdated (lowers it). Effective importance = base + 0.5 x (helpful - harmful); it does not make the memory look recent.",
    "inputSchema": {
     "properties": {
      "helpful": {
       "description": "true if it helped, false if wrong or harmful.",
       "title": "Helpful",
       "type": "boolean"
      },
      "memory_id": {
       "description": "The memory's id (mem_...).",
       "minLength": 4,
       "title": "Memory Id",
       "type": "string"
      },
      "reason": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Why, in a few words.",
       "title": "Reason"
      }
     },
     "required": [
      "memory_id",
      "helpful"
     ],
     "title": "feedbackArguments",
     "type": "object"
    },
    "name": "feedback"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Reflect on a project's recent observations: returns guiding questions and evidence groups (topics, recent errors and fixes, repeated items). Answer them yourself and save each conclusion with observe(observation_type=\"insight\" or \"procedure\", cites=[chunk ids]). Use when the session briefing says reflection is due.",
    "inputSchema": {
     "properties": {
      "focus": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only observations about this.",
       "title": "Focus"
      },
      "project": {
       "description": "Project name (see list-projects), worktree folder name or path.",
       "minLength": 1,
       "title": "Project",
       "type": "string"
      }
     },
     "required": [
      "project"
     ],
     "title": "reflectArguments",
     "type": "object"
    },
    "name": "reflect"
   }
  ]
 },
 "tools/list 2025-11-25": {
  "tools": [
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What do we know about X: past discussion, errors, decisions, files, commands, ranked by relevance. Not for \"what happened last/recently\" (use reconstruct) or \"how did we get to X\" (use recall).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "hybrid",
       "description": "hybrid (default) = keywords + meaning; keyword = exact terms.",
       "enum": [
        "hybrid",
        "keyword",
        "vector"
       ],
       "title": "Mode",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "Words, identifiers, error text.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "searchArguments",
     "type": "object"
    },
    "name": "search"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "How did we solve or decide X: walks the causal chain backwards from the best match and tells the episode in order (problem, attempts, fix). Not for recency questions (use reconstruct).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "The fix, decision or result to explain.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "recallArguments",
     "type": "object"
    },
    "name": "recall"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What usually comes next: walks the causal chain forwards from similar past moments (follow-up steps, later errors, what was done after). Use before a familiar multi-step task.",
    "inputSchema": {
     "properties": {
      "context": {
       "description": "The current task, error or step.",
       "minLength": 1,
       "title": "Context",
       "type": "string"
      },
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "required": [
      "context"
     ],
     "title": "predictArguments",
     "type": "object"
    },
    "name": "predict"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What happened recently or in session S, in time order: the tool for \"what did we do last time / yesterday / in that session\". mode=briefing gives the last session's state (this worktree's when it has one; branch, last request, open todos, errors, files) and its final steps, for resuming work. With query: what happened in the session where X.",
    "inputSchema": {
     "properties": {
      "current_session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The session you are in, to leave it out.",
       "title": "Current Session Id"
      },
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only the last N days.",
       "title": "Days Back"
      },
      "end": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Up to this ISO date/time (a date: that whole day).",
       "title": "End"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "timeline",
       "description": "timeline = chunks in time order; briefing = state + last steps.",
       "enum": [
        "timeline",
        "briefing"
       ],
       "title": "Mode",
       "type": "string"
      },
      "previous_session": {
       "default": false,
       "description": "The session before the newest (or before current_session_id).",
       "title": "Previous Session",
       "type": "boolean"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: session_id's project, else the one Claude Code runs in (for a query, any project when memory holds nothing of that one).",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "A question about a session (\"what came out of the session where we ...\"): answers it from the session of the best match (or session_id): how it started, the matching turns, how it ended, and (when it chose the session) other sessions' matches in the budget left. mode does not apply.",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "This session: full id or its first 8+ characters.",
       "title": "Session Id"
      },
      "start": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "From this ISO date/time.",
       "title": "Start"
      }
     },
     "title": "reconstructArguments",
     "type": "object"
    },
    "name": "reconstruct"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The projects in memory with session and chunk counts and time spans; use the names as `project` in other tools.",
    "inputSchema": {
     "properties": {},
     "title": "list_projectsArguments",
     "type": "object"
    },
    "name": "list-projects"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "A project's sessions, newest first, with ids, times, sizes and titles; use an id with reconstruct.",
    "inputSchema": {
     "properties": {
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only sessions active in the last N days.",
       "title": "Days Back"
      },
      "limit": {
       "default": 30,
       "description": "Most sessions to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: the project Claude Code runs in.",
       "title": "Project"
      }
     },
     "title": "list_sessionsArguments",
     "type": "object"
    },
    "name": "list-sessions"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "Counts of what memory holds: projects, sessions, chunks, edges, vectors, topics.",
    "inputSchema": {
     "properties": {
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "title": "statsArguments",
     "type": "object"
    },
    "name": "stats"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The topic map of memory: groups of similar past work, each named by its distinctive terms, with size, time span and projects, largest first; with topic_id, that topic's chunks in time order. For an overview of what past work covered.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most topics (or chunks) to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "topic_id": {
       "anyOf": [
        {
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Show this topic's chunks (ids from the list).",
       "title": "Topic Id"
      }
     },
     "title": "topicsArguments",
     "type": "object"
    },
    "name": "topics"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": true,
     "idempotentHint": true,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Delete memory by project, session, time range and/or query, e.g. when the user asks to forget something. Previews by default; deletes only with dry_run=false, and leaves tombstones so a re-ingest does not bring it back. Show the preview to the user before deleting.",
    "inputSchema": {
     "properties": {
      "after": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks from this ISO date/time on, e.g. 2026-01-31.",
       "title": "After"
      },
      "before": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks before this ISO date/time.",
       "title": "Before"
      },
      "dry_run": {
       "default": true,
       "description": "true (default) only previews; false deletes for good.",
       "title": "Dry Run",
       "type": "boolean"
      },
      "memory_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Forget this remembered observation (id from search/memories) instead.",
       "title": "Memory Id"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks similar to this text (see threshold).",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this session (full id).",
       "title": "Session Id"
      },
      "threshold": {
       "default": 0.6,
       "description": "Similarity needed with a query, 0-1.",
       "exclusiveMinimum": 0,
       "maximum": 1,
       "title": "Threshold",
       "type": "number"
      }
     },
     "title": "forgetArguments",
     "type": "object"
    },
    "name": "forget"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "When each causantic hook (session start briefing, background ingest at compaction and session end) last ran and whether it failed. For diagnosing missing memory.",
    "inputSchema": {
     "properties": {},
     "title": "hook_statusArguments",
     "type": "object"
    },
    "name": "hook-status"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Remember something for future sessions: a user's standing instruction (\"always use pnpm\"), a decision and its reason, a hard-won fix, or an insight/procedure you drew after `reflect`. Stored locally, shown in session briefings and in search results. An exact repeat is counted, not duplicated.",
    "inputSchema": {
     "properties": {
      "cites": {
       "anyOf": [
        {
         "items": {
          "type": "string"
         },
         "type": "array"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Chunk ids the statement rests on (from search/reflect).",
       "title": "Cites"
      },
      "content": {
       "description": "One self-contained statement to remember.",
       "maxLength": 4000,
       "minLength": 1,
       "title": "Content",
       "type": "string"
      },
      "importance": {
       "anyOf": [
        {
         "maximum": 10,
         "minimum": 1,
         "type": "number"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Override the type's default importance (instruction 10 ... tool_output 3).",
       "title": "Importance"
      },
      "observation_type": {
       "default": "general",
       "description": "instruction (a standing rule from the user), decision, error (and its fix), insight / procedure (your synthesis after reflect), code_change, test_result, general, tool_output",
       "enum": [
        "instruction",
        "error",
        "decision",
        "code_change",
        "insight",
        "procedure",
        "test_result",
        "general",
        "tool_output"
       ],
       "title": "Observation Type",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The project it applies to: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for every project.",
       "title": "Project"
      }
     },
     "required": [
      "content"
     ],
     "title": "observeArguments",
     "type": "object"
    },
    "name": "observe"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "List remembered observations (instructions, decisions, fixes, insights), most important first, with ids for feedback and forget.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most memories to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "observation_type": {
       "anyOf": [
        {
         "enum": [
          "instruction",
          "error",
          "decision",
          "code_change",
          "insight",
          "procedure",
          "test_result",
          "general",
          "tool_output"
         ],
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this type.",
       "title": "Observation Type"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project (plus global ones): a name, worktree folder name or path.",
       "title": "Project"
      }
     },
     "title": "memoriesArguments",
     "type": "object"
    },
    "name": "memories"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Tell memory whether a remembered observation helped (raises its importance) or was wrong/outdated (lowers it). Effective importance = base + 0.5 x (helpful - harmful); it does not make the memory look recent.",
    "inputSchema": {
     "properties": {
      "helpful": {
       "description": "true if it helped, false if wrong or harmful.",
       "title": "Helpful",
       "type": "boolean"
      },
      "memory_id": {
       "description": "The memory's id (mem_...).",
       "minLength": 4,
       "title": "Memory Id",
       "type": "string"
      },
      "reason": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Why, in a few words.",
       "title": "Reason"
      }
     },
     "required": [
      "memory_id",
      "helpful"
     ],
     "title": "feedbackArguments",
     "type": "object"
    },
    "name": "feedback"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Reflect on a project's recent observations: returns guiding questions and evidence groups (topics, recent errors and fixes, repeated items). Answer them yourself and save each conclusion with observe(observation_type=\"insight\" or \"procedure\", cites=[chunk ids]). Use when the session briefing says reflection is due.",
    "inputSchema": {
     "properties": {
      "focus": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only observations about this.",
       "title": "Focus"
      },
      "project": {
       "description": "Project name (see list-projects), worktree folder name or path.",
       "minLength": 1,
       "title": "Project",
       "type": "string"
      }
     },
     "required": [
      "project"
     ],
     "title": "reflectArguments",
     "type": "object"
    },
    "name": "reflect"
   }
  ]
 },
 "tools/list 2026-07-28": {
  "_meta": {
   "io.modelcontextprotocol/serverInfo": {
    "name": "causantic",
    "version": "0.1.0"
   }
  },
  "cacheScope": "private",
  "resultType": "complete",
  "tools": [
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What do we know about X: past discussion, errors, decisions, files, commands, ranked by relevance. Not for \"what happened last/recently\" (use reconstruct) or \"how did we get to X\" (use recall).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "hybrid",
       "description": "hybrid (default) = keywords + meaning; keyword = exact terms.",
       "enum": [
        "hybrid",
        "keyword",
        "vector"
       ],
       "title": "Mode",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "Words, identifiers, error text.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "searchArguments",
     "type": "object"
    },
    "name": "search"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "How did we solve or decide X: walks the causal chain backwards from the best match and tells the episode in order (problem, attempts, fix). Not for recency questions (use reconstruct).",
    "inputSchema": {
     "properties": {
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "description": "The fix, decision or result to explain.",
       "minLength": 1,
       "title": "Query",
       "type": "string"
      }
     },
     "required": [
      "query"
     ],
     "title": "recallArguments",
     "type": "object"
    },
    "name": "recall"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What usually comes next: walks the causal chain forwards from similar past moments (follow-up steps, later errors, what was done after). Use before a familiar multi-step task.",
    "inputSchema": {
     "properties": {
      "context": {
       "description": "The current task, error or step.",
       "minLength": 1,
       "title": "Context",
       "type": "string"
      },
      "limit": {
       "anyOf": [
        {
         "maximum": 50,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Most results (default: as many as the token budget holds).",
       "title": "Limit"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "required": [
      "context"
     ],
     "title": "predictArguments",
     "type": "object"
    },
    "name": "predict"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "What happened recently or in session S, in time order: the tool for \"what did we do last time / yesterday / in that session\". mode=briefing gives the last session's state (this worktree's when it has one; branch, last request, open todos, errors, files) and its final steps, for resuming work. With query: what happened in the session where X.",
    "inputSchema": {
     "properties": {
      "current_session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The session you are in, to leave it out.",
       "title": "Current Session Id"
      },
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only the last N days.",
       "title": "Days Back"
      },
      "end": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Up to this ISO date/time (a date: that whole day).",
       "title": "End"
      },
      "max_tokens": {
       "anyOf": [
        {
         "maximum": 20000,
         "minimum": 200,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Answer budget in tokens (default 4000).",
       "title": "Max Tokens"
      },
      "mode": {
       "default": "timeline",
       "description": "timeline = chunks in time order; briefing = state + last steps.",
       "enum": [
        "timeline",
        "briefing"
       ],
       "title": "Mode",
       "type": "string"
      },
      "previous_session": {
       "default": false,
       "description": "The session before the newest (or before current_session_id).",
       "title": "Previous Session",
       "type": "boolean"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: session_id's project, else the one Claude Code runs in (for a query, any project when memory holds nothing of that one).",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "A question about a session (\"what came out of the session where we ...\"): answers it from the session of the best match (or session_id): how it started, the matching turns, how it ended, and (when it chose the session) other sessions' matches in the budget left. mode does not apply.",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "This session: full id or its first 8+ characters.",
       "title": "Session Id"
      },
      "start": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "From this ISO date/time.",
       "title": "Start"
      }
     },
     "title": "reconstructArguments",
     "type": "object"
    },
    "name": "reconstruct"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The projects in memory with session and chunk counts and time spans; use the names as `project` in other tools.",
    "inputSchema": {
     "properties": {},
     "title": "list_projectsArguments",
     "type": "object"
    },
    "name": "list-projects"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "A project's sessions, newest first, with ids, times, sizes and titles; use an id with reconstruct.",
    "inputSchema": {
     "properties": {
      "days_back": {
       "anyOf": [
        {
         "maximum": 3650,
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only sessions active in the last N days.",
       "title": "Days Back"
      },
      "limit": {
       "default": 30,
       "description": "Most sessions to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Project name (see list-projects), worktree folder name or path; left out: the project Claude Code runs in.",
       "title": "Project"
      }
     },
     "title": "list_sessionsArguments",
     "type": "object"
    },
    "name": "list-sessions"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "Counts of what memory holds: projects, sessions, chunks, edges, vectors, topics.",
    "inputSchema": {
     "properties": {
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      }
     },
     "title": "statsArguments",
     "type": "object"
    },
    "name": "stats"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "The topic map of memory: groups of similar past work, each named by its distinctive terms, with size, time span and projects, largest first; with topic_id, that topic's chunks in time order. For an overview of what past work covered.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most topics (or chunks) to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "topic_id": {
       "anyOf": [
        {
         "minimum": 1,
         "type": "integer"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Show this topic's chunks (ids from the list).",
       "title": "Topic Id"
      }
     },
     "title": "topicsArguments",
     "type": "object"
    },
    "name": "topics"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": true,
     "idempotentHint": true,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Delete memory by project, session, time range and/or query, e.g. when the user asks to forget something. Previews by default; deletes only with dry_run=false, and leaves tombstones so a re-ingest does not bring it back. Show the preview to the user before deleting.",
    "inputSchema": {
     "properties": {
      "after": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks from this ISO date/time on, e.g. 2026-01-31.",
       "title": "After"
      },
      "before": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks before this ISO date/time.",
       "title": "Before"
      },
      "dry_run": {
       "default": true,
       "description": "true (default) only previews; false deletes for good.",
       "title": "Dry Run",
       "type": "boolean"
      },
      "memory_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Forget this remembered observation (id from search/memories) instead.",
       "title": "Memory Id"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for all projects.",
       "title": "Project"
      },
      "query": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only chunks similar to this text (see threshold).",
       "title": "Query"
      },
      "session_id": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this session (full id).",
       "title": "Session Id"
      },
      "threshold": {
       "default": 0.6,
       "description": "Similarity needed with a query, 0-1.",
       "exclusiveMinimum": 0,
       "maximum": 1,
       "title": "Threshold",
       "type": "number"
      }
     },
     "title": "forgetArguments",
     "type": "object"
    },
    "name": "forget"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "When each causantic hook (session start briefing, background ingest at compaction and session end) last ran and whether it failed. For diagnosing missing memory.",
    "inputSchema": {
     "properties": {},
     "title": "hook_statusArguments",
     "type": "object"
    },
    "name": "hook-status"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Remember something for future sessions: a user's standing instruction (\"always use pnpm\"), a decision and its reason, a hard-won fix, or an insight/procedure you drew after `reflect`. Stored locally, shown in session briefings and in search results. An exact repeat is counted, not duplicated.",
    "inputSchema": {
     "properties": {
      "cites": {
       "anyOf": [
        {
         "items": {
          "type": "string"
         },
         "type": "array"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Chunk ids the statement rests on (from search/reflect).",
       "title": "Cites"
      },
      "content": {
       "description": "One self-contained statement to remember.",
       "maxLength": 4000,
       "minLength": 1,
       "title": "Content",
       "type": "string"
      },
      "importance": {
       "anyOf": [
        {
         "maximum": 10,
         "minimum": 1,
         "type": "number"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Override the type's default importance (instruction 10 ... tool_output 3).",
       "title": "Importance"
      },
      "observation_type": {
       "default": "general",
       "description": "instruction (a standing rule from the user), decision, error (and its fix), insight / procedure (your synthesis after reflect), code_change, test_result, general, tool_output",
       "enum": [
        "instruction",
        "error",
        "decision",
        "code_change",
        "insight",
        "procedure",
        "test_result",
        "general",
        "tool_output"
       ],
       "title": "Observation Type",
       "type": "string"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "The project it applies to: a name from list-projects, a worktree folder name, or a path inside it (\".\" = the current one); omit for every project.",
       "title": "Project"
      }
     },
     "required": [
      "content"
     ],
     "title": "observeArguments",
     "type": "object"
    },
    "name": "observe"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "openWorldHint": false,
     "readOnlyHint": true
    },
    "description": "List remembered observations (instructions, decisions, fixes, insights), most important first, with ids for feedback and forget.",
    "inputSchema": {
     "properties": {
      "limit": {
       "default": 30,
       "description": "Most memories to list.",
       "maximum": 200,
       "minimum": 1,
       "title": "Limit",
       "type": "integer"
      },
      "observation_type": {
       "anyOf": [
        {
         "enum": [
          "instruction",
          "error",
          "decision",
          "code_change",
          "insight",
          "procedure",
          "test_result",
          "general",
          "tool_output"
         ],
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this type.",
       "title": "Observation Type"
      },
      "project": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only this project (plus global ones): a name, worktree folder name or path.",
       "title": "Project"
      }
     },
     "title": "memoriesArguments",
     "type": "object"
    },
    "name": "memories"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Tell memory whether a remembered observation helped (raises its importance) or was wrong/outdated (lowers it). Effective importance = base + 0.5 x (helpful - harmful); it does not make the memory look recent.",
    "inputSchema": {
     "properties": {
      "helpful": {
       "description": "true if it helped, false if wrong or harmful.",
       "title": "Helpful",
       "type": "boolean"
      },
      "memory_id": {
       "description": "The memory's id (mem_...).",
       "minLength": 4,
       "title": "Memory Id",
       "type": "string"
      },
      "reason": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Why, in a few words.",
       "title": "Reason"
      }
     },
     "required": [
      "memory_id",
      "helpful"
     ],
     "title": "feedbackArguments",
     "type": "object"
    },
    "name": "feedback"
   },
   {
    "_meta": {
     "anthropic/maxResultSizeChars": 100000
    },
    "annotations": {
     "destructiveHint": false,
     "idempotentHint": false,
     "openWorldHint": false,
     "readOnlyHint": false
    },
    "description": "Reflect on a project's recent observations: returns guiding questions and evidence groups (topics, recent errors and fixes, repeated items). Answer them yourself and save each conclusion with observe(observation_type=\"insight\" or \"procedure\", cites=[chunk ids]). Use when the session briefing says reflection is due.",
    "inputSchema": {
     "properties": {
      "focus": {
       "anyOf": [
        {
         "type": "string"
        },
        {
         "type": "null"
        }
       ],
       "default": null,
       "description": "Only observations about this.",
       "title": "Focus"
      },
      "project": {
       "description": "Project name (see list-projects), worktree folder name or path.",
       "minLength": 1,
       "title": "Project",
       "type": "string"
      }
     },
     "required": [
      "project"
     ],
     "title": "reflectArguments",
     "type": "object"
    },
    "name": "reflect"
   }
  ],
  "ttlMs": 0
 }
}'''
