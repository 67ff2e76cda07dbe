SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Rock' ORDER BY t.milliseconds DESC, t.trackid LIMIT 3	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'Canada' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'France' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'Brazil'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 7	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Reggae'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Classical' ORDER BY t.milliseconds DESC, t.trackid LIMIT 9	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'Chile' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'USA' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'Canada'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 6	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Blues'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Latin' ORDER BY t.milliseconds DESC, t.trackid LIMIT 8	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'India' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'Portugal' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'Chile'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 5	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Jazz'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Metal' ORDER BY t.milliseconds DESC, t.trackid LIMIT 7	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'Brazil' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'Germany' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'India'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 4	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Pop'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Rock' ORDER BY t.milliseconds DESC, t.trackid LIMIT 6	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'Canada' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'France' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'Brazil'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 3	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Reggae'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Classical' ORDER BY t.milliseconds DESC, t.trackid LIMIT 5	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'Chile' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'USA' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'Canada'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 9	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Blues'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Latin' ORDER BY t.milliseconds DESC, t.trackid LIMIT 4	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'India' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'Portugal' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'Chile'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 8	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Jazz'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Metal' ORDER BY t.milliseconds DESC, t.trackid LIMIT 3	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'Brazil' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'Germany' ORDER BY 2, 1	chinook
SELECT name FROM artist WHERE name = 'No Such Artist'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 7	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Pop'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Rock' ORDER BY t.milliseconds DESC, t.trackid LIMIT 9	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'Canada' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'France' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'Brazil'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 6	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Reggae'	chinook
SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid WHERE g.name = 'Classical' ORDER BY t.milliseconds DESC, t.trackid LIMIT 8	chinook
SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = 'Chile' GROUP BY billingcountry	chinook
SELECT firstname, lastname FROM customer WHERE country = 'USA' ORDER BY 2, 1	chinook
SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = 'Canada'	chinook
SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = al.artistid GROUP BY ar.artistid HAVING count(*) >= 5	chinook
SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = 'Blues'	chinook
