// Allure 3 configuration for `bin/chaos report` (allure generate reads it from the repo root).
export default {
  name: "ndbchaos: chaos and availability report",
  // Test history carried from one report to the next (status and duration trends, a test's
  // earlier results): kept beside the reports, never committed.
  historyPath: "./reports/history.jsonl",
};
