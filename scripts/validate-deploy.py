#!/usr/bin/env python3
"""Checks Deploy/ offline (run by `make test`):

- every Kubernetes manifest against the Kubernetes schemas (kubernetes-validate, strict: unknown
  fields are errors);
- KEDA resources (no schema ships for them) parse and carry the fields KEDA's docs require;
- the rules the fleet depends on: one worker per node (required anti-affinity), Guaranteed QoS
  with whole CPUs, readiness on /readyz and liveness on /healthz, a termination grace period
  longer than the worker's own, the database URL from a Secret, a KEDA queue query that counts
  running jobs too;
- the systemd unit with systemd-analyze verify;
- Deploy/compose.yaml against the Compose specification's JSON schema (shipped in the
  docker-compose 1.29.2 wheel from PyPI, fetched once into .kiroku/cache) and the start-up order
  the fleet needs (postgres healthy, then migrate completed, then workers and autoscaler);
- Deploy/Dockerfile's runtime rules: exec-form ENTRYPOINT (signals reach kiroku), a non-root
  USER, a HEALTHCHECK, multi-stage. `make container-test` builds and runs the image itself;
- Deploy/grafana/kiroku.json: valid JSON, every panel with a query, every metric a query names one
  that Kiroku exports (read from the sources' metric labels, with the suffixes histograms add);
- Deploy/prometheus/kiroku-alerts.yaml: `promtool check rules`, `promtool test rules` on
  kiroku-alerts.test.yaml (series that fire each alert and series that do not), metrics Kiroku
  exports, and the same groups as the PrometheusRule in Deploy/kubernetes/prometheus-rule.yaml.

Prints one line per file; exits 1 on the first class of failure found, naming file and field.
"""
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

root = Path(__file__).resolve().parent.parent
failures = []


def fail(path, message):
    failures.append(f"{path.relative_to(root)}: {message}")


def seconds(text):
    match = re.fullmatch(r"(\d+)(ms|s|m)", text)
    if not match:
        return None
    value, unit = int(match.group(1)), match.group(2)
    return value / 1000 if unit == "ms" else value * (60 if unit == "m" else 1)


def check_worker(path, deployment):
    spec = deployment["spec"]["template"]["spec"]
    anti = spec.get("affinity", {}).get("podAntiAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", [])
    if not any(term.get("topologyKey") == "kubernetes.io/hostname" for term in anti):
        fail(path, "worker pods need required podAntiAffinity on kubernetes.io/hostname (one worker per node)")
    container = spec["containers"][0]
    resources = container.get("resources", {})
    if resources.get("requests") != resources.get("limits"):
        fail(path, "worker requests must equal limits (Guaranteed QoS)")
    cpu = str(resources.get("limits", {}).get("cpu", ""))
    if not cpu.isdigit():
        fail(path, f"worker CPU limit must be whole CPUs, got {cpu!r}")
    if container.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/readyz":
        fail(path, "readinessProbe must be /readyz (ready only after the model is warm)")
    if container.get("livenessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
        fail(path, "livenessProbe must be /healthz")
    args = container.get("args", [])
    grace = seconds(args[args.index("--grace-period") + 1]) if "--grace-period" in args else 30
    if spec.get("terminationGracePeriodSeconds", 30) <= grace:
        fail(path, f"terminationGracePeriodSeconds must exceed the worker's --grace-period ({grace}s)")
    env = {item["name"]: item for item in container.get("env", [])}
    if "secretKeyRef" not in env.get("KIROKU_DATABASE_URL", {}).get("valueFrom", {}):
        fail(path, "KIROKU_DATABASE_URL must come from a Secret")
    annotations = deployment["spec"]["template"]["metadata"].get("annotations", {})
    if annotations.get("prometheus.io/scrape") != "true":
        fail(path, "workers need the prometheus.io/scrape annotation")


def check_keda(path, document):
    kind, spec = document["kind"], document.get("spec", {})
    if kind == "TriggerAuthentication":
        refs = spec.get("secretTargetRef", [])
        if not refs or not all({"parameter", "name", "key"} <= set(ref) for ref in refs):
            fail(path, "TriggerAuthentication.spec.secretTargetRef needs parameter, name and key")
        return
    if kind != "ScaledObject":
        fail(path, f"unexpected KEDA kind {kind}")
        return
    if not spec.get("scaleTargetRef", {}).get("name"):
        fail(path, "ScaledObject.spec.scaleTargetRef.name is required")
    triggers = spec.get("triggers", [])
    if not triggers:
        fail(path, "ScaledObject.spec.triggers is required")
    for trigger in triggers:
        metadata = trigger.get("metadata", {})
        if trigger.get("type") == "postgresql":
            if not {"query", "targetQueryValue"} <= set(metadata):
                fail(path, "postgresql trigger needs metadata.query and metadata.targetQueryValue")
            if not (trigger.get("authenticationRef", {}).get("name") or metadata.get("connectionFromEnv")):
                fail(path, "postgresql trigger needs authenticationRef or connectionFromEnv")
            if "running" not in metadata.get("query", ""):
                fail(path, "the queue query must count running jobs too, or the fleet scales in under running work")
        elif trigger.get("type") == "prometheus":
            if not {"serverAddress", "query", "threshold"} <= set(metadata):
                fail(path, "prometheus trigger needs serverAddress, query and threshold")
        else:
            fail(path, f"unexpected trigger type {trigger.get('type')}")


manifests = sorted((root / "Deploy/kubernetes").glob("*.yaml"))
if not manifests:
    fail(root / "Deploy/kubernetes", "no manifests")
for path in manifests:
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    kinds = []
    for document in documents:
        kinds.append(document.get("kind"))
        if document.get("apiVersion", "").startswith("keda.sh/"):
            check_keda(path, document)
            continue
        if document.get("kind") == "PrometheusRule":
            continue  # no schema ships for it: checked against the rules file below
        try:
            kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)
        except kubernetes_validate.ValidationError as error:
            fail(path, f"{document.get('kind')}: {error.message} at {'/'.join(map(str, error.path))}")
        if document.get("kind") == "Deployment" and document["metadata"]["name"].startswith("kiroku-worker"):
            check_worker(path, document)
    print(f"checked {path.relative_to(root)}: {', '.join(kinds)}")

unit = root / "Deploy/systemd/kiroku-worker.service"
result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
problems = [line for line in (result.stdout + result.stderr).splitlines()
            if line.strip() and "is not executable" not in line and "/usr/local/bin/kiroku" not in line]
if problems:
    fail(unit, "; ".join(problems))
text = unit.read_text()
for required in ("Restart=on-failure", "KillSignal=SIGTERM", "EnvironmentFile=", "User="):
    if required not in text:
        fail(unit, f"missing {required}")
stop = re.search(r"TimeoutStopSec=(\d+)", text)
grace = re.search(r"--grace-period (\d+)s", text)
if not stop or not grace or int(stop.group(1)) <= int(grace.group(1)):
    fail(unit, "TimeoutStopSec must exceed the worker's --grace-period")
print(f"checked {unit.relative_to(root)}")


def compose_schema():
    cache = root / ".kiroku/cache"
    wheel = cache / "docker_compose-1.29.2-py2.py3-none-any.whl"
    if not wheel.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(cache),
                        "docker-compose==1.29.2"], check=True)
    with zipfile.ZipFile(wheel) as archive:
        return json.loads(archive.read("compose/config/compose_spec.json"))


compose_path = root / "Deploy/compose.yaml"
compose = yaml.safe_load(compose_path.read_text())
for error in jsonschema.Draft7Validator(compose_schema()).iter_errors(compose):
    fail(compose_path, f"{error.message} at {'/'.join(map(str, error.path))}")
services = compose.get("services", {})


def condition(service, dependency):
    return services.get(service, {}).get("depends_on", {}).get(dependency, {}).get("condition")


if condition("migrate", "postgres") != "service_healthy":
    fail(compose_path, "migrate must wait for postgres to be healthy")
for service in ("worker", "autoscaler"):
    if condition(service, "migrate") != "service_completed_successfully":
        fail(compose_path, f"{service} must wait for migrate to complete successfully")
worker = services.get("worker", {})
worker_grace = seconds(worker["command"][worker["command"].index("--grace-period") + 1])
if seconds(worker.get("stop_grace_period", "10s")) <= worker_grace:
    fail(compose_path, "the worker's stop_grace_period must exceed its --grace-period")
if "cpus" not in worker:
    fail(compose_path, "the worker needs cpus (its thread count follows the CPUs it is granted)")
print(f"checked {compose_path.relative_to(root)}: {', '.join(services)}")

dockerfile_path = root / "Deploy/Dockerfile"
instructions = [line.split(None, 1) for line in dockerfile_path.read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#") and not line.startswith((" ", "\t"))]
final_stage = instructions[max(i for i, (keyword, *_) in enumerate(instructions) if keyword == "FROM"):]
final = {keyword: (rest[0] if rest else "") for keyword, *rest in final_stage}
if sum(1 for keyword, *_ in instructions if keyword == "FROM") < 2:
    fail(dockerfile_path, "expected a multi-stage build")
if not final.get("ENTRYPOINT", "").startswith("["):
    fail(dockerfile_path, "ENTRYPOINT must be exec form so SIGTERM reaches kiroku")
if final.get("USER", "root") in ("root", "0"):
    fail(dockerfile_path, "the runtime stage must run as a non-root USER")
if "HEALTHCHECK" not in final:
    fail(dockerfile_path, "the runtime stage needs a HEALTHCHECK")
print(f"checked {dockerfile_path.relative_to(root)}")

# Metrics: the names Kiroku's sources register, with the series a histogram or timer adds.
exported = set()
for source in (root / "Sources").rglob("*.swift"):
    for name in re.findall(r'label: "(kiroku_[a-z_]+)"', source.read_text()):
        exported |= {name, name + "_bucket", name + "_sum", name + "_count"}


def unknown_metrics(expression):
    return sorted(set(re.findall(r"\bkiroku_[a-z_]+\b", expression)) - exported)


dashboard_path = root / "Deploy/grafana/kiroku.json"
try:
    dashboard = json.loads(dashboard_path.read_text())
except json.JSONDecodeError as error:
    fail(dashboard_path, f"not JSON: {error}")
    dashboard = {"panels": []}
if not dashboard.get("panels"):
    fail(dashboard_path, "no panels")
if "pool" not in [variable.get("name") for variable in dashboard.get("templating", {}).get("list", [])]:
    fail(dashboard_path, "needs a pool variable")
for panel in dashboard.get("panels", []):
    expressions = [target.get("expr", "") for target in panel.get("targets", [])]
    if not expressions or not all(e.strip() for e in expressions):
        fail(dashboard_path, f"panel '{panel.get('title')}' has no query")
    for expression in expressions:
        if not re.search(r"\bkiroku_[a-z_]+", expression):
            fail(dashboard_path, f"panel '{panel.get('title')}': {expression} names no Kiroku metric")
        for name in unknown_metrics(expression):
            fail(dashboard_path, f"panel '{panel.get('title')}': {name} is not a metric Kiroku exports")
print(f"checked {dashboard_path.relative_to(root)}: {len(dashboard.get('panels', []))} panels")

rules_path = root / "Deploy/prometheus/kiroku-alerts.yaml"
for arguments in (["check", "rules", rules_path.name], ["test", "rules", "kiroku-alerts.test.yaml"]):
    result = subprocess.run(["promtool", *arguments], capture_output=True, text=True, cwd=rules_path.parent)
    if result.returncode:
        fail(rules_path, f"promtool {' '.join(arguments)}: {(result.stdout + result.stderr).strip()}")
rules = yaml.safe_load(rules_path.read_text())
for rule in (rule for group in rules["groups"] for rule in group["rules"]):
    for name in unknown_metrics(rule["expr"]):
        fail(rules_path, f"{rule.get('alert')}: {name} is not a metric Kiroku exports")
operator_rule = yaml.safe_load((root / "Deploy/kubernetes/prometheus-rule.yaml").read_text())
if operator_rule.get("spec") != rules:
    fail(root / "Deploy/kubernetes/prometheus-rule.yaml", "spec differs from Deploy/prometheus/kiroku-alerts.yaml's groups")
print(f"checked {rules_path.relative_to(root)}: promtool check and test, {sum(len(g['rules']) for g in rules['groups'])} alerts")

if failures:
    print("\n".join(["", "Deploy/ checks failed:"] + failures), file=sys.stderr)
    sys.exit(1)
print("Deploy/: every manifest valid against Kubernetes " + kubernetes_validate.latest_version()
      + ", KEDA fields present, systemd unit verified, compose valid, Dockerfile rules kept, dashboard and alerts checked")
