#!/usr/bin/env bash
# The README's first calls and API examples as one script that runs as written, against a running
# server: `npm start`, then `bash scripts/examples.sh` (LOUPE_URL if the server is elsewhere; the
# admin tool needs the server's DATABASE_URL). After the first blank line, this file is exactly the
# README's `sh scripts/examples.sh` blocks, in order: test/src/process/readme-examples.test.ts
# checks that, and runs this file against the server on SQLite and on PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."

B=${LOUPE_URL:-http://127.0.0.1:8000}; J='content-type: application/json'
# field a.0.b: prints that field of the JSON on stdin (node is at hand: Loupe runs on it).
field() { node -e 'let v = JSON.parse(require("fs").readFileSync(0, "utf8")); for (const k of process.argv[1].split(".")) v = v[k]; console.log(v)' "$1"; }
# A user of entity acme and its key (with --silent, npm prints nothing before the tool's JSON line).
KEY=$(npm run --silent admin -- users create "alice-$(date +%s)-$$" --entity acme --role member --json | field api_key)
# api: curl with that key; prints the answer, or the error body and stops the script on a non-2xx.
api() { curl -sS --fail-with-body -w '\n' -u "api:$KEY" "$@"; }
curl -sS --fail-with-body $B/inference/router/partner/models | field data.0.id   # public, no credentials
api $B/me                                                                       # who am I

# The demo data set is entity demo: its key reads and writes demo/chatbot (and not acme/bot).
DEMO_KEY=$(npm run --silent admin -- demo --json | field api_key)
curl -sS --fail-with-body -w '\n' -u "api:$DEMO_KEY" -H "$J" $B/annotation_queues/query -d '{"project_id":"demo/chatbot"}'

api -H "$J" $B/calls/batch/create -d '{"batch":[
  {"project_id":"acme/bot","id":"call-1","op_name":"answer","started_at":"2026-11-22T10:00:00Z",
   "ended_at":"2026-11-22T10:00:02Z","inputs":{"q":"hi"},"output":{"a":"hello"}}]}'   # {"res":[{"id":"call-1"}]}
api "$B/calls/call-1?project_id=acme/bot"                                               # {"call":{…}}
api -H "$J" $B/calls/query -d '{"project_id":"acme/bot","filter":{"op_names":["answer"]},"limit":50}'
api -H "$J" $B/projects/query -d '{}'   # your entities' projects that hold data: {"projects":[{"project_id":"acme/bot",…,"counts":{"calls":1,…}}]}

REF=$(api -H "$J" $B/annotation_specs -d '{"project_id":"acme/bot","name":"helpfulness",
  "field_schema":{"type":"integer","minimum":1,"maximum":5}}' | field ref); echo "REF=$REF"   # svc:///acme/bot/object/helpfulness:<digest>
api -H "$J" $B/annotation_specs/query -d '{"project_id":"acme/bot","names":["helpfulness"]}'

Q=$(api -H "$J" $B/annotation_queues -d '{"project_id":"acme/bot","name":"Review",
  "scorer_refs":["'"$REF"'"],"annotations_per_item":1,"lease_seconds":900}' | field id); echo "Q=$Q"
api -H "$J" $B/annotation_queues/query -d '{"project_id":"acme/bot","name":"rev"}'
api "$B/annotation_queues/$Q?project_id=acme/bot"
api -H "$J" -X PUT $B/annotation_queues/$Q -d '{"project_id":"acme/bot","description":"weekly"}'
api -H "$J" $B/annotation_queues/$Q/items -d '{"project_id":"acme/bot","call_ids":["call-1"]}'
#   {"added_count":1,"duplicates":[],"missing_call_ids":[]}
api -H "$J" $B/annotation_queues/$Q/items/query -d '{"project_id":"acme/bot",
  "filter":{"annotation_states":["unstarted"]},"sort_by":[{"field":"call_started_at","direction":"desc"}],
  "include_position":true,"limit":100}'
ITEM=$(api -H "$J" $B/annotation_queues/$Q/items/claim -d '{"project_id":"acme/bot"}' | field item.id); echo "ITEM=$ITEM"
#   the answer is {"item":{…}}, or {"item":null} when no item is left to claim
api -H "$J" $B/annotation_queues/$Q/items/$ITEM/progress -d '{"project_id":"acme/bot","annotation_state":"completed"}'
api -H "$J" $B/annotation_queues/stats -d '{"project_id":"acme/bot","queue_ids":["'"$Q"'"]}'
api -X DELETE "$B/annotation_queues/$Q/items/$ITEM?project_id=acme/bot"
api -X DELETE "$B/annotation_queues/$Q?project_id=acme/bot"

NOTE=$(api -H "$J" $B/feedback/batch/create -d '{"batch":[
  {"project_id":"acme/bot","svc_ref":"svc:///acme/bot/call/call-1","feedback_type":"svc.reaction.1","payload":{"emoji":"👍🏽"}},
  {"project_id":"acme/bot","svc_ref":"svc:///acme/bot/call/call-1","feedback_type":"svc.note.1","payload":{"note":"too long"}},
  {"project_id":"acme/bot","svc_ref":"svc:///acme/bot/call/call-1","feedback_type":"svc.annotation.helpfulness",
   "annotation_ref":"'"$REF"'","payload":{"value":4}}]}' | field res.1.id); echo "NOTE=$NOTE"
#   the answer is {"res":[{"id":…,"created_at":…,"svc_user_id":…,"payload":{"emoji":"👍🏽","alias":":thumbs_up_medium_skin_tone:",
#                  "detoned":"👍","detoned_alias":":thumbs_up:"}},…]}, in the order of the batch: res.1 is the note
api -H "$J" $B/feedback/create -d '{"project_id":"acme/bot","svc_ref":"svc:///acme/bot/call/call-1","feedback_type":"thumbs","payload":{"up":true}}'
api -H "$J" $B/feedback/query -d '{"project_id":"acme/bot","filter":{"feedback_types":["svc.reaction.1"]},"limit":100}'
# replace stores a new record with a new id in place of NOTE; that new id is the one to purge.
NEW=$(api -H "$J" $B/feedback/replace -d '{"feedback_id":"'"$NOTE"'","project_id":"acme/bot","svc_ref":"svc:///acme/bot/call/call-1",
  "feedback_type":"svc.note.1","payload":{"note":"fine"}}' | field id); echo "NEW=$NEW"
api -H "$J" $B/feedback/purge -d '{"project_id":"acme/bot","ids":["'"$NEW"'"]}'   # {"deleted_count":1}

ME=$(api $B/me | field user_id); echo "ME=$ME"
api -H "$J" $B/projects/users -d '{"project_id":"acme/bot","user_ids":["'"$ME"'","no-such-user"]}'
#   {"users":[{"user_id":"<ME>","username":"alice-…"}]}: the unknown id is left out

# OpenTelemetry: a small GenAI trace from the SDK, configured by the standard variables only.
export OTEL_EXPORTER_OTLP_ENDPOINT=$B/otel OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20$KEY,X-Loupe-Project=acme/traces"
node docs/examples/send-genai-trace.mjs   # TRACE=<its trace id>
api -H "$J" $B/calls/query -d '{"project_id":"acme/traces","filter":{"root_only":true}}'   # the agent span, as a call
api -H "$J" $B/calls/query -d '{"project_id":"acme/traces","filter":{"attributes":[{"path":"gen_ai.request.model","op":"eq","value":"gpt-4o"}]}}'

# The CLI takes the server and the key from the environment: the same key as `api`.
export LOUPE_URL=$B LOUPE_API_KEY=$KEY
T=$(mktemp -d)
cat > $T/calls.jsonl <<'JSONL'
{"id":"c-1","op_name":"answer","started_at":"2026-11-22T10:00:00Z","inputs":{"q":"refund?"},"output":{"a":"30 days"}}
{"id":"c-2","op_name":"answer","started_at":"2026-11-22T10:01:00Z","inputs":{"q":"shipping?"},"output":{"a":"2 days"}}
JSONL
npm run --silent loupe -- import calls $T/calls.jsonl --project acme/cli
#   on stderr: calls: 2 of 2 records stored; lines 1-2; 0.1s, 20 records/s
# A rubric field and a queue that uses it, then the file's calls in the queue.
SPEC=$(npm run --silent loupe -- specs create --project acme/cli --name correct --schema '{"type":"boolean"}')
CQ=$(npm run --silent loupe -- queues create --project acme/cli --name review --spec "$SPEC"); echo "CQ=$CQ"
npm run --silent loupe -- queues add $CQ --project acme/cli --from-file $T/calls.jsonl
#   2 added; 0 already in the queue; 0 not stored calls
# Annotate in the web app (/app/), or import the labels as feedback lines:
cat > $T/labels.jsonl <<JSONL
{"svc_ref":"svc:///acme/cli/call/c-1","call_ref":"svc:///acme/cli/call/c-1","queue_id":"$CQ","feedback_type":"svc.annotation.correct","annotation_ref":"$SPEC","payload":{"value":true}}
JSONL
npm run --silent loupe -- import feedback $T/labels.jsonl --project acme/cli
npm run --silent loupe -- export queue $CQ --project acme/cli --format csv --out $T/labels.csv
npm run --silent loupe -- export feedback --project acme/cli --type svc.annotation.correct   # JSON Lines on stdout
