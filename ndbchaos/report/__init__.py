"""Report: the timeline plot, Allure attachments and environment files."""
