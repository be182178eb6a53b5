// promptfoo 0.123.1's is-html, contains-html, is-sql and contains-sql (src/assertions/html.ts and sql.ts, as its
// npm package's dist/src/evaluator-*.js holds them), run by imported suites with the same libraries (parse5,
// node-sql-parser). Copied from promptfoo (github.com/promptfoo/promptfoo, MIT license); changed: the libraries
// are found from the suite's folder, the working folder or NODE_PATH, and run() is added.
'use strict';
let searchPaths = [];
function loadModule(name) {
  const paths = [...searchPaths, process.cwd(), ...(process.env.NODE_PATH || '').split(require('path').delimiter)];
  let found;
  try {
    found = require.resolve(name, { paths: paths.filter(Boolean) });
  } catch {
    throw new Error(`${name} is not installed: promptfoo's check needs it (npm install ${name} in the suite's folder)`);
  }
  return require(found);
}
const parse$1 = (...args) => loadModule('parse5').parse(...args);
function coerceString(value) {
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}
//#region src/assertions/html.ts
const LITERAL_WRAPPER_PATTERNS = {
	html: /<html(?=[\s>/])/,
	head: /<head(?=[\s>/])/,
	body: /<body(?=[\s>/])/
};
function isWrapperTagName(tagName) {
	return tagName === "html" || tagName === "head" || tagName === "body";
}
function isTextNode(node) {
	return node.nodeName === "#text";
}
function isElementNode(node) {
	return "tagName" in node;
}
function hasSourceCodeLocation(element) {
	return "sourceCodeLocation" in element && element.sourceCodeLocation !== null && element.sourceCodeLocation !== void 0;
}
function getChildNodes(node) {
	return "childNodes" in node ? node.childNodes : [];
}
function findFirstElement(root, predicate) {
	const stack = [root];
	while (stack.length > 0) {
		const current = stack.pop();
		if (isElementNode(current) && predicate(current)) return current;
		const children = getChildNodes(current);
		for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
	}
}
function hasTopLevelText(parentNode) {
	return parentNode.childNodes.some((node) => isTextNode(node) && Boolean(node.value.trim()));
}
function isUserProvidedElement(element, inputLowercase) {
	const tagName = element.tagName.toLowerCase();
	if (isWrapperTagName(tagName)) return LITERAL_WRAPPER_PATTERNS[tagName].test(inputLowercase) && hasSourceCodeLocation(element);
	return VALID_HTML_ELEMENTS.has(tagName) || tagName.includes("-");
}
const HTML_PATTERNS = {
	openingTag: /<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>/,
	closingTag: /<\/[a-zA-Z][a-zA-Z0-9-]*\s*>/,
	selfClosingTag: /<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?\/>/,
	htmlEntity: /&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);/,
	doctype: /<!DOCTYPE\s+html/i,
	htmlComment: /<!--[^-]*(?:-[^-]+)*-->/,
	htmlAttribute: /\s[a-zA-Z-]+=\s*["'][^"']*["']/
};
const MAX_INPUT_SIZE = 10485760;
function containsHtml(text) {
	if (text.length > MAX_INPUT_SIZE) return false;
	let htmlIndicators = 0;
	const hasOpening = HTML_PATTERNS.openingTag.test(text);
	const hasClosing = HTML_PATTERNS.closingTag.test(text);
	if (hasOpening && hasClosing) htmlIndicators += 2;
	else if (hasOpening || hasClosing) htmlIndicators += 1;
	if (HTML_PATTERNS.selfClosingTag.test(text)) htmlIndicators += 1;
	if (HTML_PATTERNS.htmlEntity.test(text)) htmlIndicators += 1;
	if (HTML_PATTERNS.doctype.test(text)) htmlIndicators += 2;
	if (HTML_PATTERNS.htmlComment.test(text)) htmlIndicators += 1;
	if (HTML_PATTERNS.htmlAttribute.test(text)) htmlIndicators += 1;
	if (/<(html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input|button|script|style|link|meta|br|hr)\b/i.test(text)) htmlIndicators += 2;
	if (htmlIndicators >= 2) return true;
	return false;
}
const VALID_HTML_ELEMENTS = /* @__PURE__ */ new Set([
	"html",
	"head",
	"title",
	"base",
	"link",
	"meta",
	"style",
	"body",
	"article",
	"section",
	"nav",
	"aside",
	"h1",
	"h2",
	"h3",
	"h4",
	"h5",
	"h6",
	"header",
	"footer",
	"address",
	"p",
	"hr",
	"pre",
	"blockquote",
	"ol",
	"ul",
	"li",
	"dl",
	"dt",
	"dd",
	"figure",
	"figcaption",
	"main",
	"div",
	"a",
	"em",
	"strong",
	"small",
	"s",
	"cite",
	"q",
	"dfn",
	"abbr",
	"ruby",
	"rt",
	"rp",
	"data",
	"time",
	"code",
	"var",
	"samp",
	"kbd",
	"sub",
	"sup",
	"i",
	"b",
	"u",
	"mark",
	"bdi",
	"bdo",
	"span",
	"br",
	"wbr",
	"img",
	"iframe",
	"embed",
	"object",
	"param",
	"picture",
	"source",
	"video",
	"audio",
	"track",
	"map",
	"area",
	"svg",
	"math",
	"script",
	"noscript",
	"canvas",
	"ins",
	"del",
	"table",
	"caption",
	"colgroup",
	"col",
	"tbody",
	"thead",
	"tfoot",
	"tr",
	"td",
	"th",
	"form",
	"label",
	"input",
	"button",
	"select",
	"datalist",
	"optgroup",
	"option",
	"textarea",
	"output",
	"progress",
	"meter",
	"fieldset",
	"legend",
	"details",
	"summary",
	"dialog",
	"menu",
	"slot",
	"template"
]);
function validateHtml(htmlString) {
	const trimmed = htmlString.trim();
	if (!trimmed) return {
		isValid: false,
		reason: "Output is empty"
	};
	if (trimmed.length > MAX_INPUT_SIZE) return {
		isValid: false,
		reason: "Output exceeds maximum size limit"
	};
	if (/^\s*<\?xml/i.test(trimmed)) return {
		isValid: false,
		reason: "Output appears to be XML, not HTML"
	};
	const document = parse$1(trimmed, { sourceCodeLocationInfo: true });
	const inputLowercase = trimmed.toLowerCase();
	const body = findFirstElement(document, (element) => element.tagName === "body");
	if (!(body !== void 0 && LITERAL_WRAPPER_PATTERNS.body.test(inputLowercase) && hasSourceCodeLocation(body)) && body && hasTopLevelText(body)) return {
		isValid: false,
		reason: "Output must be wrapped in HTML tags"
	};
	if (!findFirstElement(document, (element) => isUserProvidedElement(element, inputLowercase))) return {
		isValid: false,
		reason: "Output does not contain recognized HTML elements"
	};
	return {
		isValid: true,
		reason: "Output is valid HTML"
	};
}
const handleContainsHtml = ({ assertion, outputString, inverse }) => {
	const pass = containsHtml(outputString) !== inverse;
	return {
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : `Expected output to ${inverse ? "not " : ""}contain HTML content`,
		assertion
	};
};
const handleIsHtml = ({ assertion, outputString, inverse }) => {
	const result = validateHtml(outputString);
	const pass = result.isValid !== inverse;
	return {
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : result.reason,
		assertion
	};
};
//#endregion
//#region src/assertions/sql.ts
const STANDARD_SELECT_MODIFIER_PATTERN = "(?:all|distinct)";
const MYSQL_SELECT_MODIFIER_PATTERN = "(?:all|distinct(?:row)?|high_priority|straight_join|sql_(?:big_result|buffer_result|cache|calc_found_rows|no_cache|small_result))";
const IDENTIFIER_PATTERN = "[A-Za-z_][A-Za-z0-9_]*";
function createLikelyMissingCommaPattern(selectModifierPattern) {
	return new RegExp(String.raw`\bselect\s+(?:${selectModifierPattern}\s+)*(?!${selectModifierPattern}\b)${IDENTIFIER_PATTERN}\s+${IDENTIFIER_PATTERN}\s+from\b`, "i");
}
const STANDARD_LIKELY_MISSING_COMMA_PATTERN = createLikelyMissingCommaPattern(STANDARD_SELECT_MODIFIER_PATTERN);
const MYSQL_LIKELY_MISSING_COMMA_PATTERN = createLikelyMissingCommaPattern(MYSQL_SELECT_MODIFIER_PATTERN);
const MYSQL_FAMILY_DATABASES = /* @__PURE__ */ new Set(["MySQL", "MariaDB"]);
const BRACKET_IDENTIFIER_DATABASES = /* @__PURE__ */ new Set(["TransactSQL", "Sqlite"]);
const SQL_EXPRESSION_PLACEHOLDER = " ? ";
function getLikelyMissingCommaPattern(databaseType) {
	return MYSQL_FAMILY_DATABASES.has(databaseType) ? MYSQL_LIKELY_MISSING_COMMA_PATTERN : STANDARD_LIKELY_MISSING_COMMA_PATTERN;
}
const DOLLAR_QUOTE_DELIMITER_PATTERN = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/;
function readDollarQuoteDelimiter(sql, start) {
	return DOLLAR_QUOTE_DELIMITER_PATTERN.exec(sql.slice(start))?.[0];
}
function findQuotedTextEnd(sql, start, quote) {
	const closingQuote = quote === "[" ? "]" : quote;
	let cursor = start + 1;
	while (cursor < sql.length) {
		if (closingQuote !== "]" && sql[cursor] === "\\") {
			cursor += 2;
			continue;
		}
		if (sql[cursor] === closingQuote) {
			if (sql[cursor + 1] === closingQuote) {
				cursor += 2;
				continue;
			}
			return cursor + 1;
		}
		cursor++;
	}
	return sql.length;
}
function stripIgnoredSqlText(sql, databaseType) {
	const chunks = [];
	const supportsBracketIdentifiers = BRACKET_IDENTIFIER_DATABASES.has(databaseType);
	let plainTextStart = 0;
	let cursor = 0;
	while (cursor < sql.length) {
		const character = sql[cursor];
		let ignoredTextEnd;
		let replacement = " ";
		if (character === "'" || character === "\"" || character === "`" || character === "[" && supportsBracketIdentifiers) {
			ignoredTextEnd = findQuotedTextEnd(sql, cursor, character);
			replacement = SQL_EXPRESSION_PLACEHOLDER;
		} else if (character === "-" && sql[cursor + 1] === "-" || character === "#") {
			ignoredTextEnd = cursor + 1;
			while (ignoredTextEnd < sql.length && sql[ignoredTextEnd] !== "\r" && sql[ignoredTextEnd] !== "\n") ignoredTextEnd++;
		} else if (character === "/" && sql[cursor + 1] === "*") {
			const commentEnd = sql.indexOf("*/", cursor + 2);
			ignoredTextEnd = commentEnd === -1 ? sql.length : commentEnd + 2;
		} else if (character === "$") {
			const delimiter = readDollarQuoteDelimiter(sql, cursor);
			if (delimiter) {
				const quoteEnd = sql.indexOf(delimiter, cursor + delimiter.length);
				ignoredTextEnd = quoteEnd === -1 ? sql.length : quoteEnd + delimiter.length;
				replacement = SQL_EXPRESSION_PLACEHOLDER;
			}
		}
		if (ignoredTextEnd === void 0) {
			cursor++;
			continue;
		}
		chunks.push(sql.slice(plainTextStart, cursor), replacement);
		cursor = ignoredTextEnd;
		plainTextStart = cursor;
	}
	chunks.push(sql.slice(plainTextStart));
	return chunks.join("");
}
async function createSqlParser() {
	let sqlParserModule;
	try {
		sqlParserModule = loadModule("node-sql-parser");
	} catch {
		throw new Error("node-sql-parser is not installed. Please install it first");
	}
	const SqlParser = sqlParserModule.Parser ?? sqlParserModule.default?.Parser;
	if (!SqlParser) throw new Error("node-sql-parser is not installed. Please install it first");
	return new SqlParser();
}
const handleIsSql = async ({ assertion, renderedValue, outputString, inverse }) => {
	let pass = false;
	let databaseType = "MySQL";
	let allowedTables;
	let allowedColumns;
	if (renderedValue && typeof renderedValue === "object") {
		const value = renderedValue;
		databaseType = value.databaseType || "MySQL";
		allowedTables = value.allowedTables;
		allowedColumns = value.allowedColumns;
	}
	if (renderedValue && typeof renderedValue !== "object") throw new Error("is-sql assertion must have a object value.");
	const sqlParser = await createSqlParser();
	const opt = { database: databaseType };
	const failureReasons = [];
	const normalizedSql = outputString.trim();
	if (normalizedSql.length === 0) failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	if (/`/.test(normalizedSql) && (normalizedSql.match(/`/g)?.length ?? 0) % 2 !== 0) failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	const sqlForHeuristics = stripIgnoredSqlText(normalizedSql, databaseType);
	if (getLikelyMissingCommaPattern(databaseType).test(sqlForHeuristics)) failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	if (databaseType === "MySQL" && /\bgenerate_series\s*\(/i.test(normalizedSql)) failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	try {
		sqlParser.astify(outputString, opt);
		pass = !inverse;
	} catch {
		pass = inverse;
		failureReasons.push(`SQL statement does not conform to the provided ${databaseType} database syntax.`);
	}
	if (failureReasons.length > 0) pass = inverse;
	if (allowedTables) {
		opt.type = "table";
		try {
			sqlParser.whiteListCheck(outputString, allowedTables, opt);
		} catch (err) {
			pass = inverse;
			const error = err;
			let actualTables = [];
			try {
				const { tableList } = sqlParser.parse(outputString, opt);
				actualTables = tableList || [];
			} catch {}
			if (actualTables.length > 0) failureReasons.push(`SQL references unauthorized table(s). Found: [${actualTables.join(", ")}]. Allowed: [${allowedTables.join(", ")}].`);
			else failureReasons.push(`SQL validation failed: ${error.message}.`);
		}
	}
	if (allowedColumns) {
		opt.type = "column";
		const normalizedAllowedColumns = [...allowedColumns];
		for (const item of allowedColumns) {
			const parts = item.split("::");
			if (parts.length === 3 && parts[1] !== "null") {
				const alt = `${parts[0]}::null::${parts[2]}`;
				if (!normalizedAllowedColumns.includes(alt)) normalizedAllowedColumns.push(alt);
			}
		}
		try {
			sqlParser.whiteListCheck(outputString, normalizedAllowedColumns, opt);
		} catch (err) {
			pass = inverse;
			const error = err;
			let actualColumns = [];
			try {
				const { columnList } = sqlParser.parse(outputString, opt);
				actualColumns = columnList || [];
			} catch {}
			if (actualColumns.length > 0) failureReasons.push(`SQL references unauthorized column(s). Found: [${actualColumns.join(", ")}]. Allowed: [${allowedColumns.join(", ")}].`);
			else failureReasons.push(`SQL validation failed: ${error.message}.`);
		}
	}
	if (inverse && pass === false && failureReasons.length === 0) failureReasons.push("The output SQL statement is valid");
	return {
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : failureReasons.join(" "),
		assertion
	};
};
function parseCodeFence(line) {
	let index = 0;
	while (index < 3 && (line[index] === " " || line[index] === "	")) index++;
	const character = line[index];
	if (character !== "`" && character !== "~") return;
	const fenceStart = index;
	while (line[index] === character) index++;
	const length = index - fenceStart;
	if (length < 3) return;
	const info = line.slice(index);
	let whitespaceIndex = 0;
	while (whitespaceIndex < info.length && (info[whitespaceIndex] === " " || info[whitespaceIndex] === "	")) whitespaceIndex++;
	return {
		character,
		length,
		info,
		hasOnlyTrailingWhitespace: whitespaceIndex === info.length
	};
}
function extractSqlCodeBlocks(output) {
	const sqlBlocks = [];
	let activeBlock;
	for (const line of output.split(/\r\n?|\n/)) {
		const fence = parseCodeFence(line);
		if (!activeBlock) {
			if (fence) {
				const language = fence.info.trim().toLowerCase();
				activeBlock = {
					body: [],
					fenceCharacter: fence.character,
					fenceLength: fence.length,
					isSql: language === "" || language === "sql"
				};
			}
			continue;
		}
		if (fence?.hasOnlyTrailingWhitespace && fence.character === activeBlock.fenceCharacter && fence.length >= activeBlock.fenceLength) {
			if (activeBlock.isSql) sqlBlocks.push(activeBlock.body.join("\n").trim());
			activeBlock = void 0;
		} else activeBlock.body.push(line);
	}
	return sqlBlocks;
}
const handleContainsSql = async (assertionParams) => {
	const outputString = coerceString(assertionParams.outputString);
	const sqlBlocks = extractSqlCodeBlocks(outputString);
	const candidates = sqlBlocks.length > 0 ? sqlBlocks : [outputString];
	let failureReason = "Output does not contain valid SQL";
	let containsValidSql = false;
	for (const candidate of candidates) {
		if (candidate.trim().length === 0) continue;
		const result = await handleIsSql({
			...assertionParams,
			outputString: candidate,
			inverse: false
		});
		if (result.pass) {
			containsValidSql = true;
			break;
		}
		failureReason = result.reason;
	}
	const pass = assertionParams.inverse ? !containsValidSql : containsValidSql;
	return {
		assertion: assertionParams.assertion,
		pass,
		score: pass ? 1 : 0,
		reason: pass ? "Assertion passed" : containsValidSql ? "The output SQL statement is valid" : failureReason
	};
};
//#endregion
const HANDLERS = {
  'is-html': handleIsHtml,
  'contains-html': handleContainsHtml,
  'is-sql': handleIsSql,
  'contains-sql': handleContainsSql,
};
// Run one check: context is {type (without not-), value, inverse, paths (where the libraries are looked for)}.
async function run(output, context) {
  searchPaths = context.paths || [];
  const assertion = { type: context.type, value: context.value };
  const result = await HANDLERS[context.type]({
    assertion,
    renderedValue: context.value === null ? undefined : context.value,
    outputString: coerceString(output),
    inverse: Boolean(context.inverse),
  });
  return { pass: result.pass, score: result.score, reason: result.reason };
}
module.exports = { run };
