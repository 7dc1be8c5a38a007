"""What a user has stored beyond the conversation rows: attachments (uploads, the blocks a model reads, their files),
export, removal and the retention purge."""
