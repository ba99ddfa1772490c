-- Who read the pages: the text layer, OCR, a spreadsheet or text-file reader, or a model.
SELECT reader, count(*) AS pages
FROM pages
GROUP BY reader
ORDER BY pages DESC, reader
