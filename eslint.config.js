// Type-aware lint: the rules that catch real bugs in async control-plane code.
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: ["node_modules/**", "cdk.out/**", "coverage/**", "dist/**", ".ci/**", ".dependency-cruiser.cjs"],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/restrict-template-expressions": [
        "error",
        { allowNumber: true, allowBoolean: true },
      ],
    },
  },
  {
    // The core decides; it is handed the time and never draws randomness (.dependency-cruiser.cjs
    // keeps its imports pure).
    files: ["functions/core/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: "functions/core reads no clock: take the time as an argument.",
        },
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: "functions/core reads no clock: take the time as an argument.",
        },
        {
          selector: "MemberExpression[object.name='performance'][property.name='now']",
          message: "functions/core reads no clock: take the time as an argument.",
        },
        {
          selector: "CallExpression[callee.object.name='Math'][callee.property.name='random']",
          message: "functions/core draws no randomness: take it as an argument.",
        },
      ],
    },
  },
  {
    // eslint.config.js, the CLI's entry point, the install step of npm start and npm test, and the
    // dashboard's browser script (plain JavaScript).
    files: ["eslint.config.js", "bin/cairn.js", "scripts/*.mjs", "dashboard/static/**/*.js"],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
