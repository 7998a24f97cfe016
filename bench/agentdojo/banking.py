"""AgentDojo's banking suite (v1) for harness.py: the `bank` tool (tools/bank) and the
data-flow rules of the defended mode (SECURITY.md): who money goes to, and the password,
must come from the user's request, not from anything a tool read."""

TOOL = "bank"

RULES = (
    'trusted_args = { send-money = ["recipient"], schedule-transaction = ["recipient"], '
    'update-scheduled-transaction = ["recipient"], update-password = ["password"] }\n'
)
