"""What a user may use: messages a minute and open sockets (limits), daily tokens and cost (budgets), and the prices cost is counted in."""
