// A Tool server in Node.js speaking the Flow Tool protocol over stdio (docs/spec/abi.md,
// "Tool protocol"): one JSON message a line on stdin, one answer a line on stdout.
// No npm dependencies. Bind it with tools.toml: "strings.reverse" = "exec:node server.js".
"use strict";

const readline = require("readline");

const PROTOCOL = "flow-tools/1";
const DATA_VERSION = 1;

// The Tools served: signature texts as flowrt renders them, and their functions. A function
// returns the declared Result in JSON form ({"Ok": v} or {"Err": e}), or throws.
const TOOLS = {
  "strings.reverse": {
    params: ["Text"],
    result: "Result<Text, Text>",
    run: ([text]) => (text.length === 0 ? { Err: "empty" } : { Ok: Array.from(text).reverse().join("") }),
  },
  "strings.count": {
    params: ["List<Text>"],
    result: "Result<Int, Text>",
    run: ([words]) => ({ Ok: words.reduce((n, w) => n + Array.from(w).length, 0) }),
  },
};

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

function hello() {
  return {
    type: "hello",
    protocol: PROTOCOL,
    data_version: DATA_VERSION,
    tools: Object.entries(TOOLS).map(([name, t]) => ({
      tool: name,
      type_params: 0,
      params: t.params,
      result: t.result,
    })),
  };
}

function answer(msg) {
  const tool = TOOLS[msg.tool];
  if (tool === undefined) {
    return { type: "not_run", id: msg.id, reason: `this server does not serve ${msg.tool}` };
  }
  try {
    return { type: "result", id: msg.id, result: tool.run(msg.args) };
  } catch (e) {
    return { type: "unknown", id: msg.id, reason: `${e.name}: ${e.message}` };
  }
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (line.trim() === "") return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    send({ type: "unknown", id: null, reason: "the line is not JSON" });
    return;
  }
  if (msg.type === "hello") {
    if (msg.data_version !== DATA_VERSION) {
      send({ type: "refused", reason: `this server speaks data version ${DATA_VERSION}, not ${msg.data_version}` });
      return;
    }
    send(hello());
  } else if (msg.type === "call") {
    send(answer(msg));
  } else {
    send({ type: "not_run", id: msg.id, reason: `unknown message type ${msg.type}` });
  }
});
