"""sessiondb under the agent SDKs people already use (docs/adapters/).

One module per SDK, each needing its SDK's optional extra and imported only when asked
for: `from sessiondb.adapters.openai_agents import SessiondbSession`. Nothing here
imports an SDK, so `import sessiondb` never does.
"""
