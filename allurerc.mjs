// Allure 3 configuration for `bin/chaos report` (allure generate reads it from the repo root).
export default {
  name: "ndbchaos: chaos and availability report",
};
