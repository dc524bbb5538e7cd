/** Writes the document the server under test serves to openapi.json (see ../../update-openapi). */
import { writeFileSync } from "node:fs";
import { join } from "node:path";

import { Server, packageDir } from "./server.js";

const server = await Server.start();
try {
  const document = await server.client(server.createKey("openapi")).openapi();
  writeFileSync(join(packageDir, "openapi.json"), `${JSON.stringify(document, null, 2)}\n`);
  console.log(`wrote ${join(packageDir, "openapi.json")} from ${server.base}`);
} finally {
  await server.stop();
}
