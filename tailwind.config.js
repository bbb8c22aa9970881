/** @type {import('tailwindcss').Config} */
module.exports = {
  // Class names live in templates and scripts only, so Go code never feeds the build.
  content: ["./views/**/*.html", "./static/src/js/**/*.js"],
  theme: {
    extend: {
      colors: {
        brand: {
          50: "#eef6ff", 100: "#d9ebff", 200: "#bcdcff", 300: "#8ec6ff", 400: "#59a5ff",
          500: "#3380fc", 600: "#1d61f1", 700: "#154bdd", 800: "#183eb3", 900: "#1a398d",
        },
      },
    },
  },
  plugins: [],
};
