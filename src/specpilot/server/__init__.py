"""`specpilot serve`: HTTP serving with continuous batching of speculative requests.

protocol.py (request parsing, OpenAI-style errors), engine.py (engine thread, queues, text
streaming), metrics.py (Prometheus text), app.py (FastAPI routes), command.py (the CLI command).
"""
