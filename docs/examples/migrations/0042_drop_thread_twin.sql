-- The moderator's thread page is rare: drop the unfiltered twin to save its writes.
DROP INDEX CONCURRENTLY posts_thread_all_idx;
