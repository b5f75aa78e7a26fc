"""Developer tools: vector generator and scenarios, rule table (not shipped)."""
