#!/bin/sh
# Reward 1 when /app/hello.txt holds exactly "Hello, world!"; downloads nothing.
if [ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, world!" ]; then echo 1; else echo 0; fi >/logs/verifier/reward.txt
