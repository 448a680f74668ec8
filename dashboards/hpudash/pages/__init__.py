"""One module per page, each with PATH, TITLE, `layout(ctx)` and `register(app, store)`."""
