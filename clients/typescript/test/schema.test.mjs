// The request and response types follow the OpenAPI document: src/schema.ts
// is generated from it, and must be its current form.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { generate, outPath, specPath } from "../scripts/gen-schema.mjs";

test("src/schema.ts is generated from the current OpenAPI document", () => {
  const spec = JSON.parse(readFileSync(specPath, "utf8"));
  assert.ok(spec.openapi.startsWith("3.1"), "an OpenAPI 3.1 document");
  const want = generate(spec);
  const got = readFileSync(outPath, "utf8");
  assert.ok(got === want, "src/schema.ts is stale: run `node scripts/gen-schema.mjs` in clients/typescript");
});

test("every request and answer of the document has a type", () => {
  const spec = JSON.parse(readFileSync(specPath, "utf8"));
  const src = readFileSync(outPath, "utf8");
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op?.operationId) continue;
      const name = op.operationId.charAt(0).toUpperCase() + op.operationId.slice(1);
      const hasBody = Boolean(op.requestBody);
      if (hasBody && op.requestBody.$ref === undefined && !op.requestBody.content["application/json"]) continue;
      if (hasBody) assert.match(src, new RegExp(`export (interface|type) ${name}Request\\b`), `${method} ${path}`);
    }
  }
  for (const name of Object.keys(spec.components.schemas)) {
    assert.match(src, new RegExp(`export (interface|type) ${name}\\b`), name);
  }
});
