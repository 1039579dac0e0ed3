"""The standing rules' screens: the list, a new rule (from scratch, or from a failure group's page
or a "why do these fail" finding, its group and queue filled in), a rule's page with what it
would do now (the preview) and what it did, and its approval, rejection, withdrawal and removal.
The services check every rule again (four eyes, the cool-down, the parameters)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access.rights import approver_cooldown_ends
from console.permissions import APPROVE_RULES, PROPOSE_RULES, VIEW_RULES, perms_required
from console.readmodels.models import FailureGroup
from console.rules import selectors, services
from console.rules.candidates import rule_preview
from console.rules.forms import RuleForm
from console.rules.models import StandingRule as R
from console.views import decision_posted

# A new rule's form takes these from its link (a group's page, a finding).
PREFILLED = ("kind", "name", "queue", "group", "exception_type", "comment")
ENDED_SHOWN = 50


@require_GET
@login_required
@perms_required(VIEW_RULES)
def rule_list(request):
    ctx = {
        "active": selectors.rules_list(status=R.ACTIVE),
        "proposed": selectors.rules_list(status=R.PROPOSED),
        "ended": selectors.rules_list().filter(status__in=R.FINAL)[:ENDED_SHOWN],
        "may_propose": request.user.has_perm(PROPOSE_RULES),
    }
    return render(request, "rules/rule_list.html", ctx)


def _group_of(fingerprint):
    return FailureGroup.objects.filter(fingerprint=fingerprint).first() if fingerprint else None


@require_http_methods(["GET", "POST"])
@login_required
@perms_required(VIEW_RULES, PROPOSE_RULES)
def rule_new(request):
    initial = {name: request.GET[name] for name in PREFILLED if request.GET.get(name)}
    group = _group_of(initial.get("group"))
    if group is not None and "queue" not in initial:
        initial["queue"] = group.queue
    form = RuleForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            rule = services.rule_propose(
                actor=request.user,
                name=data["name"],
                kind=data["kind"],
                comment=data["comment"],
                params=form.params(),
            )
        except ValidationError as exc:
            for message in exc.messages:
                form.add_error(None, message)
        else:
            messages.success(request, f"Rule {rule.id} waits for a second person's approval.")
            return redirect("rule-detail", rule.id)
    ctx = {"form": form, "group": group}
    return render(request, "rules/rule_new.html", ctx, status=400 if form.errors else 200)


def _rule_or_404(rule_id):
    rule = selectors.rule_get(rule_id=rule_id)
    if rule is None:
        raise Http404("no such standing rule")
    return rule


@require_GET
@login_required
@perms_required(VIEW_RULES)
def rule_detail(request, rule_id):
    rule = _rule_or_404(rule_id)
    user = request.user
    may_approve = user.has_perm(APPROVE_RULES)
    # An account in its approver cool-down sees when it may approve, not a button that refuses.
    approve_from = approver_cooldown_ends(user) if may_approve else None
    cooling = approve_from is not None
    pending = rule.status == R.PROPOSED
    ctx = {
        "rule": rule,
        "group": _group_of(rule.group),
        # What it would do now, while it may act (an ended rule does nothing more).
        "preview": rule_preview(rule=rule) if rule.status not in R.FINAL else None,
        "applications": selectors.rule_applications(rule=rule),
        "audit": selectors.rule_audit(rule=rule),
        "is_proposer": user.pk == rule.proposed_by_id,
        "approve_from": approve_from if pending else None,
        "may_decide": pending and may_approve and not cooling and user.pk != rule.proposed_by_id,
        "may_withdraw": pending and user.pk == rule.proposed_by_id,
        "may_remove": rule.status == R.ACTIVE and user.has_perm(PROPOSE_RULES),
    }
    return render(request, "rules/rule_detail.html", ctx)


def _act(service, done):
    """A rule's approval, rejection, withdrawal or removal, posted with a comment from its page:
    `service` makes it, `done(rule)` says so; back to the rule's page."""

    @require_POST
    @login_required
    @perms_required(VIEW_RULES)
    def posted(request, rule_id):
        rule = _rule_or_404(rule_id)
        back = reverse("rule-detail", args=[rule.id])
        return decision_posted(request, service=service, done=done, back=back, rule=rule)

    return posted


rule_approve = _act(services.rule_approve, lambda r: f"Rule {r.id} is active from now.")
rule_reject = _act(services.rule_reject, lambda r: f"Rule {r.id} is rejected.")
rule_withdraw = _act(services.rule_withdraw, lambda r: f"Rule {r.id} is withdrawn.")
rule_remove = _act(services.rule_remove, lambda r: f"Rule {r.id} is removed: it acts no more.")
