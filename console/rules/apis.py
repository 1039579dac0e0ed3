"""/api/v1/rules: the standing rules (read; propose), one rule with its preview and
applications, and its approval, rejection, withdrawal and removal. The screens' permissions; the
services check them again and record every change in the audit trail."""

from django.http import Http404
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import JSONParser, ServiceRefusals, valid_filters, valid_input
from console.permissions import APPROVE_RULES, PROPOSE_RULES, VIEW_RULES, has_perms, needs_text
from console.rules import api_schema, selectors, serializers, services
from console.rules.candidates import rule_preview
from console.rules.models import StandingRule as R
from console.rules.params import EVERY_PARAMETER


def _rule(rule_id):
    rule = selectors.rule_get(rule_id=rule_id)
    if rule is None:
        raise Http404("no such standing rule")
    return rule


class RuleListApi(ServiceRefusals, APIView):
    """The standing rules; and proposing one."""

    permission_classes = [has_perms(VIEW_RULES)]
    parser_classes = [JSONParser]

    @api_schema.rule_list
    def get(self, request):
        filters = valid_filters(serializers.RuleListFilterSerializer, request)
        rules = selectors.rules_list(status=filters.get("status"), kind=filters.get("kind"))
        return Response(serializers.RuleSerializer(rules, many=True).data)

    @api_schema.rule_propose
    def post(self, request):
        if not request.user.has_perm(PROPOSE_RULES):
            self.permission_denied(request, message=needs_text([PROPOSE_RULES]))
        data = valid_input(serializers.RuleProposeSerializer, request.data)
        rule = services.rule_propose(
            actor=request.user,
            name=data["name"],
            kind=data["kind"],
            comment=data["comment"],
            params={name: data[name] for name in EVERY_PARAMETER if name in data},
        )
        return Response(serializers.RuleSerializer(rule).data, status=status.HTTP_201_CREATED)


class RuleDetailApi(APIView):
    """One standing rule, what it would do now, and what it did."""

    permission_classes = [has_perms(VIEW_RULES)]

    @api_schema.rule_detail
    def get(self, request, rule_id):
        rule = _rule(rule_id)
        said = serializers.RuleSerializer(rule).data
        preview = rule_preview(rule=rule) if rule.status not in R.FINAL else None
        said["preview"] = serializers.PreviewSerializer(preview).data if preview else None
        said["applications"] = serializers.ApplicationSerializer(
            selectors.rule_applications(rule=rule), many=True
        ).data
        return Response(said)


def _decision_api(service, schema, needs=None):
    """The APIView of one change of a rule's status, with a comment: `service` makes it, for
    those who hold `needs` (the services check again); `schema` is its decoration."""

    class RuleDecisionApi(ServiceRefusals, APIView):
        permission_classes = [has_perms(VIEW_RULES)]
        parser_classes = [JSONParser]

        @schema
        def post(self, request, rule_id):
            if needs and not request.user.has_perm(needs):
                self.permission_denied(request, message=needs_text([needs]))
            rule = _rule(rule_id)
            data = valid_input(serializers.RuleCommentSerializer, request.data)
            rule = service(actor=request.user, rule=rule, comment=data.get("comment", ""))
            return Response(serializers.RuleSerializer(rule).data)

    return RuleDecisionApi


RuleApproveApi = _decision_api(services.rule_approve, api_schema.rule_approve, APPROVE_RULES)
RuleRejectApi = _decision_api(services.rule_reject, api_schema.rule_reject, APPROVE_RULES)
# Its proposer withdraws a proposal (the service checks who).
RuleWithdrawApi = _decision_api(services.rule_withdraw, api_schema.rule_withdraw)
RuleRemoveApi = _decision_api(services.rule_remove, api_schema.rule_remove, PROPOSE_RULES)
