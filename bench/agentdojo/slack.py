"""AgentDojo's slack suite (v1) for harness.py: the `slack` tool (tools/slack) and the
data-flow rules of the defended mode (SECURITY.md): who a message or an invitation goes to,
which channel, and which web address is fetched or written, must come from the user's
request, not from anything a tool read. Message bodies and page contents may (summaries of
what was read are what the suite's tasks ask for)."""

TOOL = "slack"

RULES = (
    'trusted_args = { send-direct-message = ["recipient"], send-channel-message = ["channel"], '
    'invite-user-to-slack = ["user", "user-email"], add-user-to-channel = ["user", "channel"], '
    'remove-user-from-slack = ["user"], get-webpage = ["url"], post-webpage = ["url"] }\n'
)
