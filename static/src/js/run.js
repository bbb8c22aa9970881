// One run of the run log: its trace (kept for runs sent from the
// playground) is drawn by the pages' one trace renderer.
import { traceList } from "./lib/trace.js";

const data = document.getElementById("run-trace-data");
const into = document.getElementById("run-trace-rows");
if (data && into) into.replaceWith(traceList(JSON.parse(data.textContent), { testid: "run" }));
